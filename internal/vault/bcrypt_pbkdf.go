package vault

import (
	"crypto/sha512"
	"errors"

	"golang.org/x/crypto/blowfish"
)

// bcryptPBKDF is OpenBSD's bcrypt_pbkdf(3), the KDF of passphrase-protected
// openssh-key-v1 files. golang.org/x/crypto has it only as an internal
// package of x/crypto/ssh, which this package cannot import, and
// ssh.ParseRawPrivateKeyWithPassphrase cannot stand in for it: it decrypts
// aes256-ctr and aes256-cbc only (ssh-keygen -Z offers six more modes)
// and drops the comment. bcrypt_pbkdf_test.go holds OpenBSD's known
// answers and keys from OpenSSH's regression suite.
//
// Outline: for each 32-byte output block, hash the SHA-512 of the
// passphrase against the SHA-512 of salt||be32(block) with a bcrypt-like
// Blowfish expansion, iterate rounds times XOR-ing the results, and
// interleave the blocks' bytes into the key.
func bcryptPBKDF(password, salt []byte, rounds, keyLen int) ([]byte, error) {
	const blockSize = 32
	switch {
	case rounds < 1:
		return nil, errors.New("bcrypt_pbkdf: rounds must be at least 1")
	case len(password) == 0:
		return nil, errors.New("bcrypt_pbkdf: empty passphrase")
	case len(salt) == 0 || len(salt) > 1<<20:
		return nil, errors.New("bcrypt_pbkdf: bad salt length")
	case keyLen < 1 || keyLen > 1024:
		return nil, errors.New("bcrypt_pbkdf: bad key length")
	}
	nblocks := (keyLen + blockSize - 1) / blockSize
	key := make([]byte, nblocks*blockSize)

	shapass := sha512.Sum512(password)
	defer clear(shapass[:])
	var cnt [4]byte
	var shasalt [sha512.Size]byte
	tmp := make([]byte, blockSize)
	out := make([]byte, blockSize)
	defer clear(tmp)
	defer clear(out)
	for block := 1; block <= nblocks; block++ {
		cnt[0], cnt[1], cnt[2], cnt[3] = byte(block>>24), byte(block>>16), byte(block>>8), byte(block)
		h := sha512.New()
		h.Write(salt)
		h.Write(cnt[:])
		h.Sum(shasalt[:0])
		bcryptHash(tmp, shapass[:], shasalt[:])
		copy(out, tmp)
		for i := 2; i <= rounds; i++ {
			shasalt = sha512.Sum512(tmp)
			bcryptHash(tmp, shapass[:], shasalt[:])
			for j := range out {
				out[j] ^= tmp[j]
			}
		}
		for i, v := range out {
			key[i*nblocks+(block-1)] = v
		}
	}
	clear(shasalt[:])
	clear(key[keyLen:])
	return key[:keyLen], nil
}

var bcryptMagic = []byte("OxychromaticBlowfishSwatDynamite")

// bcryptHash writes the 32-byte bcrypt hash of (shapass, shasalt) to out.
func bcryptHash(out, shapass, shasalt []byte) {
	c, err := blowfish.NewSaltedCipher(shapass, shasalt)
	if err != nil {
		panic("bcrypt_pbkdf: " + err.Error()) // a 64-byte key is always valid
	}
	for range 64 {
		blowfish.ExpandKey(shasalt, c)
		blowfish.ExpandKey(shapass, c)
	}
	copy(out, bcryptMagic)
	for i := 0; i < 32; i += 8 {
		for range 64 {
			c.Encrypt(out[i:i+8], out[i:i+8])
		}
	}
	// The reference implementation works on little-endian 32-bit words.
	for i := 0; i < 32; i += 4 {
		out[i], out[i+1], out[i+2], out[i+3] = out[i+3], out[i+2], out[i+1], out[i]
	}
}
