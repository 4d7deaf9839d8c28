package vault

import (
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/subtle"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/postern/postern/internal/safetext"
	"github.com/postern/postern/internal/sshkey"
	"golang.org/x/crypto/ssh"
)

// ParsePrivateKeyFile reads a private key file as "postern vault add"
// finds it: OpenSSH format ("BEGIN OPENSSH PRIVATE KEY", what ssh-keygen
// writes) or PEM (PKCS#1 "RSA PRIVATE KEY", PKCS#8 "PRIVATE KEY", SEC 1
// "EC PRIVATE KEY"), plain or passphrase-protected. passphrase is called
// only when the file is encrypted; the returned slice is cleared after use.
// A nil passphrase func makes an encrypted file an error.
//
// The comment is recovered from OpenSSH-format files (plain and
// encrypted); PEM files carry none and give "".
//
// Accepted key types: Ed25519, ECDSA on P-256, P-384 and P-521, and RSA of
// 2048 to 16384 bits with two primes. Other types fail with
// ErrUnsupportedKey; a wrong passphrase fails with ErrKeyPassphrase.
// Ed25519 keys are returned as ed25519.PrivateKey values, the others as
// pointers.
func ParsePrivateKeyFile(data []byte, passphrase func() ([]byte, error)) (crypto.PrivateKey, string, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, "", errors.New("no private key found: expected an OpenSSH or PEM private key file")
	}
	defer clear(block.Bytes)

	var (
		priv    crypto.PrivateKey
		comment string
		err     error
	)
	switch block.Type {
	case pemTypeOpenSSH:
		priv, comment, err = parseOpenSSHKey(data, block.Bytes, passphrase)
	case "ENCRYPTED PRIVATE KEY":
		return nil, "", errors.New("encrypted PKCS#8 keys are not supported; convert the file to OpenSSH format with ssh-keygen -p -f FILE")
	case "DSA PRIVATE KEY":
		return nil, "", errDSA
	default:
		priv, err = ssh.ParseRawPrivateKey(data)
		var missing *ssh.PassphraseMissingError
		if errors.As(err, &missing) {
			var pass []byte
			pass, err = askPassphrase(passphrase)
			if err != nil {
				return nil, "", err
			}
			priv, err = ssh.ParseRawPrivateKeyWithPassphrase(data, pass)
			clear(pass)
			// A legacy encrypted PEM key tells a wrong passphrase only
			// by its padding, which about one wrong passphrase in 256
			// passes; what it then decrypts to does not parse. Either
			// way the passphrase did not open the key.
			if err != nil {
				return nil, "", ErrKeyPassphrase
			}
		}
	}
	if errors.Is(err, x509.IncorrectPasswordError) {
		return nil, "", ErrKeyPassphrase
	}
	if err != nil {
		return nil, "", fmt.Errorf("read private key: %w", err)
	}
	priv, err = normalizeKey(priv)
	if err != nil {
		return nil, "", err
	}
	return priv, comment, nil
}

// errDSA refuses a DSA key, in whichever format.
var errDSA = fmt.Errorf("%w: DSA keys are not accepted (OpenSSH dropped them); create an Ed25519 key with ssh-keygen -t ed25519", ErrUnsupportedKey)

// acceptedType refuses a key whose type, read from the public key in the
// clear part of an OpenSSH file, is not one the vault holds: said as
// such, and before the passphrase of an encrypted file is asked for.
func acceptedType(pubBlob []byte) error {
	var pub struct {
		Type string
		Rest []byte `ssh:"rest"`
	}
	if err := ssh.Unmarshal(pubBlob, &pub); err != nil {
		return errors.New("the public key in the file is truncated")
	}
	switch t := pub.Type; t {
	case ssh.KeyAlgoED25519, ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521, ssh.KeyAlgoRSA:
		return nil
	case ssh.KeyAlgoDSA:
		return errDSA
	case ssh.KeyAlgoSKED25519, ssh.KeyAlgoSKECDSA256:
		return fmt.Errorf("%w: a %s key signs on its security key, which the file only names; add it to the agent with ssh-add", ErrUnsupportedKey, t)
	default:
		return fmt.Errorf("%w: %s keys are not accepted; postern accepts Ed25519, ECDSA (P-256, P-384, P-521) and RSA of 2048 bits or more", ErrUnsupportedKey, safetext.Quote(t, safetext.Name))
	}
}

func askPassphrase(passphrase func() ([]byte, error)) ([]byte, error) {
	if passphrase == nil {
		return nil, errors.New("the private key is passphrase-protected and no passphrase was provided")
	}
	pass, err := passphrase()
	if err != nil {
		return nil, fmt.Errorf("read the private key's passphrase: %w", err)
	}
	if len(pass) == 0 {
		return nil, ErrKeyPassphrase
	}
	return pass, nil
}

// opensshCipher describes one private-key cipher ssh-keygen can write
// (ssh-keygen -Z).
type opensshCipher struct {
	keyLen, ivLen int
	mode          string // "ctr", "cbc" or "gcm"
}

var opensshCiphers = map[string]opensshCipher{
	"aes128-ctr":             {16, 16, "ctr"},
	"aes192-ctr":             {24, 16, "ctr"},
	"aes256-ctr":             {32, 16, "ctr"},
	"aes128-cbc":             {16, 16, "cbc"},
	"aes192-cbc":             {24, 16, "cbc"},
	"aes256-cbc":             {32, 16, "cbc"},
	"aes128-gcm@openssh.com": {16, 12, "gcm"},
	"aes256-gcm@openssh.com": {32, 12, "gcm"},
}

// maxBcryptRounds bounds the work a key file can ask for (ssh-keygen's
// default is 16); the same cap as golang.org/x/crypto/ssh.
const maxBcryptRounds = 1 << 11

// parseOpenSSHKey parses an openssh-key-v1 file. pemData is the whole
// file, raw the decoded container. An encrypted section is decrypted here
// and handed to x/crypto as an unencrypted container, so that the comment
// can be read and every AES mode ssh-keygen offers is accepted.
func parseOpenSSHKey(pemData, raw []byte, passphrase func() ([]byte, error)) (crypto.PrivateKey, string, error) {
	o, err := parseOpenSSHContainer(raw)
	if err != nil {
		return nil, "", err
	}
	if err := acceptedType(o.PubKey); err != nil {
		return nil, "", err
	}
	if o.CipherName == "none" && o.KdfName == "none" {
		priv, err := ssh.ParseRawPrivateKey(pemData)
		if err != nil {
			return nil, "", err
		}
		_, comment := privateSectionInfo(o.PrivKey)
		return checkEmbeddedPublic(priv, o.PubKey, comment)
	}
	if o.KdfName != "bcrypt" {
		return nil, "", fmt.Errorf("private key uses key derivation %q, which is not supported (only bcrypt)", o.KdfName)
	}
	ci, ok := opensshCiphers[o.CipherName]
	if !ok {
		return nil, "", fmt.Errorf("private key is encrypted with %q, which is not supported; re-encrypt it with ssh-keygen -p -Z aes256-ctr", o.CipherName)
	}
	var kdf opensshBcrypt
	if err := ssh.Unmarshal(o.KdfOpts, &kdf); err != nil {
		return nil, "", errors.New("private key has malformed bcrypt parameters")
	}
	if kdf.Rounds < 1 || kdf.Rounds > maxBcryptRounds {
		return nil, "", fmt.Errorf("private key asks for %d bcrypt rounds (accepted: 1 to %d)", kdf.Rounds, maxBcryptRounds)
	}
	pass, err := askPassphrase(passphrase)
	if err != nil {
		return nil, "", err
	}
	k, err := bcryptPBKDF(pass, kdf.Salt, int(kdf.Rounds), ci.keyLen+ci.ivLen)
	clear(pass)
	if err != nil {
		return nil, "", err
	}
	defer clear(k)
	plain, err := decryptPrivateSection(ci, k[:ci.keyLen], k[ci.keyLen:], o)
	if err != nil {
		return nil, "", err
	}
	defer clear(plain)
	ok, comment := privateSectionInfo(plain)
	if !ok {
		return nil, "", ErrKeyPassphrase
	}
	container := o.marshalPlain(plain)
	defer clear(container)
	pemPlain := encodePEM(pemTypeOpenSSH, container)
	defer clear(pemPlain)
	priv, err := ssh.ParseRawPrivateKey(pemPlain)
	if err != nil {
		return nil, "", err
	}
	return checkEmbeddedPublic(priv, o.PubKey, comment)
}

func decryptPrivateSection(ci opensshCipher, key, iv []byte, o *opensshContainer) ([]byte, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	switch ci.mode {
	case "ctr":
		out := make([]byte, len(o.PrivKey))
		cipher.NewCTR(block, iv).XORKeyStream(out, o.PrivKey)
		return out, nil
	case "cbc":
		if len(o.PrivKey)%aes.BlockSize != 0 {
			return nil, errors.New("encrypted private key length is not a multiple of the AES block size")
		}
		out := make([]byte, len(o.PrivKey))
		cipher.NewCBCDecrypter(block, iv).CryptBlocks(out, o.PrivKey)
		return out, nil
	case "gcm":
		gcm, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		if len(o.Rest) < gcm.Overhead() {
			return nil, errors.New("encrypted private key has no authentication tag")
		}
		sealed := make([]byte, 0, len(o.PrivKey)+gcm.Overhead())
		sealed = append(append(sealed, o.PrivKey...), o.Rest[:gcm.Overhead()]...)
		out, err := gcm.Open(nil, iv, sealed, nil)
		if err != nil {
			return nil, ErrKeyPassphrase
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown cipher mode %q", ci.mode)
}

// checkEmbeddedPublic rejects a file whose public key blob (what ssh-add
// -L and fingerprints show) is not the public half of its private key;
// x/crypto does not compare them.
func checkEmbeddedPublic(priv crypto.PrivateKey, pubBlob []byte, comment string) (crypto.PrivateKey, string, error) {
	priv, err := normalizeKey(priv)
	if err != nil {
		return nil, "", err
	}
	signer, ok := priv.(crypto.Signer)
	if !ok {
		return nil, "", fmt.Errorf("%w: %T", ErrUnsupportedKey, priv)
	}
	pub, err := ssh.NewPublicKey(signer.Public())
	if err != nil {
		return nil, "", err
	}
	if subtle.ConstantTimeCompare(pub.Marshal(), pubBlob) != 1 {
		return nil, "", errors.New("the public key stored in the file does not match its private key; the file is damaged or forged")
	}
	return priv, comment, nil
}

// normalizeKey checks that priv is a key postern holds (see sshkey.Check)
// and returns it in the form ssh.MarshalPrivateKey expects.
func normalizeKey(priv crypto.PrivateKey) (crypto.PrivateKey, error) { return sshkey.Check(priv) }
