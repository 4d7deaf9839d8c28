package keychain

import (
	"context"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/big"

	dbus "github.com/keybase/dbus"
	"github.com/keybase/go-keychain/secretservice"
)

// The session algorithm dh-ietf1024-sha256-aes128-cbc-pkcs7 of the Secret
// Service API: a Diffie-Hellman exchange in the 1024-bit MODP group of
// RFC 2409 (the Second Oakley Group), whose shared secret, as a
// big-endian number of the group's length (128 bytes), is the input of
// HKDF-SHA256 with no salt and no info; its first 16 bytes are the AES-128
// key secrets travel under. gnome-keyring and libsecret keep the secret at
// 128 bytes. The library's own OpenSession strips its leading zero bytes
// (math/big's Bytes), so one session in 256 derives another key than the
// service and every secret in it is garbled; this file opens sessions
// itself and hands the library a session with the right key.
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

// openSession opens an encrypted session with the service.
func openSession(ctx context.Context, s *secretservice.SecretService) (*secretservice.Session, error) {
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
	err = s.ServiceObj().CallWithContext(ctx, "org.freedesktop.Secret.Service.OpenSession", secretservice.NilFlags,
		string(secretservice.AuthenticationDHAES), dbus.MakeVariant(public.FillBytes(make([]byte, groupSize)))).Store(&output, &path)
	if err != nil {
		return nil, err
	}
	theirs, ok := output.Value().([]byte)
	if !ok {
		return nil, fmt.Errorf("the service answered the session exchange with a %s, not bytes", output.Signature())
	}
	key, err := sessionKey(theirs, private)
	if err != nil {
		s.CloseSession(&secretservice.Session{Path: path})
		return nil, err
	}
	return &secretservice.Session{Mode: secretservice.AuthenticationDHAES, Path: path, Public: public, Private: private, AESKey: key}, nil
}

// sessionKey derives the session's AES-128 key from the service's public
// value and this side's private exponent.
func sessionKey(theirPublic []byte, private *big.Int) ([]byte, error) {
	y := new(big.Int).SetBytes(theirPublic)
	if len(theirPublic) > groupSize || y.Cmp(big.NewInt(1)) <= 0 || y.Cmp(new(big.Int).Sub(oakley2, big.NewInt(1))) >= 0 {
		return nil, errors.New("the service's Diffie-Hellman value is out of range")
	}
	secret := new(big.Int).Exp(y, private, oakley2).FillBytes(make([]byte, groupSize))
	defer clear(secret)
	if onSharedSecret != nil {
		onSharedSecret(secret)
	}
	return hkdf.Key(sha256.New, secret, nil, "", 16)
}
