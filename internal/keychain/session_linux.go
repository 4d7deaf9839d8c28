package keychain

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/big"

	dbus "github.com/godbus/dbus/v5"

	"github.com/postern/postern/internal/sessionbus"
)

// The session algorithm dh-ietf1024-sha256-aes128-cbc-pkcs7 of the Secret
// Service API: a Diffie-Hellman exchange in the 1024-bit MODP group of
// RFC 2409 (the Second Oakley Group), whose shared secret, as a
// big-endian number of the group's length (128 bytes), is the input of
// HKDF-SHA256 with no salt and no info; its first 16 bytes are the AES-128
// key secrets travel under, in CBC mode with PKCS#7 padding and a fresh
// IV each. gnome-keyring and libsecret keep the shared secret at 128
// bytes: one session in 256 has a leading zero byte, which a derivation
// from the number's shortest form (math/big's Bytes) would drop.
const sessionAlgorithm = "dh-ietf1024-sha256-aes128-cbc-pkcs7"

var (
	oakley2 = func() *big.Int {
		p, _ := new(big.Int).SetString("FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DDEF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7EDEE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381FFFFFFFFFFFFFFFF", 16)
		return p
	}()
	oakley2G = big.NewInt(2)
)

// groupSize is the length of the group's prime in bytes.
const groupSize = 128

// onSharedSecret, when set (tests only), sees each session's shared
// secret as the key derivation uses it.
var onSharedSecret func(secret []byte)

// session is an open session with the service: its object and the key
// secrets travel under.
type session struct {
	path dbus.ObjectPath
	key  []byte
}

// secret is a secret as the Secret Service API passes it, (oayays).
type secret struct {
	Session     dbus.ObjectPath
	Parameters  []byte // the IV
	Value       []byte // the ciphertext
	ContentType string
}

// openSession opens an encrypted session with the service.
func (s *secrets) openSession(ctx context.Context) (*session, error) {
	private, err := rand.Int(rand.Reader, new(big.Int).Sub(oakley2, big.NewInt(3)))
	if err != nil {
		return nil, err
	}
	private.Add(private, big.NewInt(2)) // in [2, p-2]
	public := new(big.Int).Exp(oakley2G, private, oakley2)
	var (
		output dbus.Variant
		path   dbus.ObjectPath
	)
	err = s.obj(servicePath).CallWithContext(ctx, serviceIface+".OpenSession", 0,
		sessionAlgorithm, dbus.MakeVariant(public.FillBytes(make([]byte, groupSize)))).Store(&output, &path)
	if err != nil {
		return nil, err
	}
	sess := &session{path: path}
	theirs, ok := output.Value().([]byte)
	if !ok {
		s.closeSession(sess)
		return nil, fmt.Errorf("the service answered the session exchange with a %s, not bytes", output.Signature())
	}
	if sess.key, err = sessionKey(theirs, private); err != nil {
		s.closeSession(sess)
		return nil, err
	}
	return sess, nil
}

// closeSession ends the session on the service and clears its key.
func (s *secrets) closeSession(sess *session) {
	ctx, cancel := sessionbus.CallContext()
	defer cancel()
	s.obj(sess.path).CallWithContext(ctx, "org.freedesktop.Secret.Session.Close", 0)
	clear(sess.key)
}

// sessionKey derives the session's AES-128 key from the service's public
// value and this side's private exponent.
func sessionKey(theirPublic []byte, private *big.Int) ([]byte, error) {
	y := new(big.Int).SetBytes(theirPublic)
	if len(theirPublic) > groupSize || y.Cmp(big.NewInt(1)) <= 0 || y.Cmp(new(big.Int).Sub(oakley2, big.NewInt(1))) >= 0 {
		return nil, errors.New("the service's Diffie-Hellman value is out of range")
	}
	shared := new(big.Int).Exp(y, private, oakley2).FillBytes(make([]byte, groupSize))
	defer clear(shared)
	if onSharedSecret != nil {
		onSharedSecret(shared)
	}
	return hkdf.Key(sha256.New, shared, nil, "", 16)
}

// seal encrypts plaintext for the service under the session's key. The
// padded copy of plaintext is cleared; the caller keeps and clears
// plaintext.
func (sess *session) seal(plaintext []byte) (secret, error) {
	block, err := aes.NewCipher(sess.key)
	if err != nil {
		return secret{}, err
	}
	iv := make([]byte, aes.BlockSize)
	rand.Read(iv)
	pad := aes.BlockSize - len(plaintext)%aes.BlockSize
	padded := make([]byte, len(plaintext)+pad)
	defer clear(padded)
	copy(padded, plaintext)
	for i := len(plaintext); i < len(padded); i++ {
		padded[i] = byte(pad)
	}
	out := make([]byte, len(padded))
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(out, padded)
	return secret{Session: sess.path, Parameters: iv, Value: out, ContentType: "application/octet-stream"}, nil
}

// open decrypts a secret the service sent in the session. The caller
// owns and clears what it returns.
func (sess *session) open(sec secret) ([]byte, error) {
	if sec.Session != sess.path {
		return nil, fmt.Errorf("the secret came in session %s, not in this one (%s)", sec.Session, sess.path)
	}
	if len(sec.Parameters) != aes.BlockSize {
		return nil, fmt.Errorf("the secret's IV is %d bytes, not %d", len(sec.Parameters), aes.BlockSize)
	}
	if len(sec.Value) == 0 || len(sec.Value)%aes.BlockSize != 0 {
		return nil, fmt.Errorf("the secret's ciphertext is %d bytes, not a positive multiple of %d", len(sec.Value), aes.BlockSize)
	}
	block, err := aes.NewCipher(sess.key)
	if err != nil {
		return nil, err
	}
	plain := make([]byte, len(sec.Value))
	cipher.NewCBCDecrypter(block, sec.Parameters).CryptBlocks(plain, sec.Value)
	pad := int(plain[len(plain)-1])
	ok := pad >= 1 && pad <= aes.BlockSize
	for i := len(plain) - pad; ok && i < len(plain); i++ {
		ok = plain[i] == byte(pad)
	}
	if !ok {
		clear(plain)
		return nil, errors.New("the secret does not decrypt in this session (its padding is wrong): a damaged entry, or a session key the service derived otherwise")
	}
	return plain[:len(plain)-pad], nil
}
