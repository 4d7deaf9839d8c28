package vault

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"

	"golang.org/x/crypto/cryptobyte"
	"golang.org/x/crypto/ssh"
)

// The "openssh-key-v1" private key container (OpenSSH PROTOCOL.key):
//
//	"openssh-key-v1\0"
//	string ciphername, string kdfname, string kdfoptions
//	u32    number of keys (1)
//	string public key blob
//	string private section (encrypted unless ciphername is "none")
//	[AEAD tag, for the ciphers that have one]
//
// and the private section, once decrypted:
//
//	u32 checkint, u32 checkint (equal when the passphrase was right)
//	string keytype, the key's fields, string comment, padding 1, 2, 3…
//
// golang.org/x/crypto/ssh parses it but drops the comment, and only
// decrypts aes256-ctr and aes256-cbc; the wire structs here (read with
// ssh.Unmarshal, as x/crypto does) recover the comment, and import.go
// decrypts the other AES modes ssh-keygen can write.
const (
	opensshMagic   = "openssh-key-v1\x00"
	pemTypeOpenSSH = "OPENSSH PRIVATE KEY"
	pemLineLen     = 70 // what ssh-keygen writes
)

// opensshContainer is the container after its magic, in SSH wire format
// (x/crypto's ssh/keys.go reads it into the same shape). The byte slices
// alias the decoded file.
type opensshContainer struct {
	CipherName string
	KdfName    string
	KdfOpts    []byte
	NumKeys    uint32
	PubKey     []byte
	PrivKey    []byte // the private section, encrypted unless CipherName is "none"
	Rest       []byte `ssh:"rest"` // an AEAD tag, for the ciphers that have one
}

// opensshBcrypt is the KdfOpts of a "bcrypt" container.
type opensshBcrypt struct {
	Salt   []byte
	Rounds uint32
}

// opensshPrivate is the start of a decrypted private section.
type opensshPrivate struct {
	Check1  uint32
	Check2  uint32
	Keytype string
	Rest    []byte `ssh:"rest"`
}

// The rest of a private section, by key type: the key's fields, then the
// comment and padding. Fields are kept as raw bytes: only the comment is
// read here, and x/crypto decodes the key itself.
type (
	opensshEd25519 struct {
		Pub, Priv []byte
		Comment   string
		Pad       []byte `ssh:"rest"`
	}
	opensshECDSA struct {
		Curve   string
		Pub, D  []byte
		Comment string
		Pad     []byte `ssh:"rest"`
	}
	opensshRSA struct {
		N, E, D, Iqmp, P, Q []byte
		Comment             string
		Pad                 []byte `ssh:"rest"`
	}
	opensshDSA struct {
		P, Q, G, Y, X []byte
		Comment       string
		Pad           []byte `ssh:"rest"`
	}
)

// parseOpenSSHContainer parses the container. The returned slices alias
// raw.
func parseOpenSSHContainer(raw []byte) (*opensshContainer, error) {
	if !bytes.HasPrefix(raw, []byte(opensshMagic)) {
		return nil, errors.New("not an openssh-key-v1 private key")
	}
	o := new(opensshContainer)
	if err := ssh.Unmarshal(raw[len(opensshMagic):], o); err != nil {
		return nil, errors.New("openssh private key is truncated")
	}
	if o.NumKeys != 1 {
		return nil, fmt.Errorf("openssh private key file holds %d keys; only single-key files are supported", o.NumKeys)
	}
	return o, nil
}

// marshalPlain builds an unencrypted container around a decrypted private
// section, in one exactly sized buffer. The caller clears the result.
func (o *opensshContainer) marshalPlain(priv []byte) []byte {
	size := len(opensshMagic) + 4 + len("none") + 4 + len("none") + 4 + 4 + 4 + len(o.PubKey) + 4 + len(priv)
	b := cryptobyte.NewFixedBuilder(make([]byte, 0, size))
	b.AddBytes([]byte(opensshMagic))
	addUint32Bytes(b, []byte("none"))
	addUint32Bytes(b, []byte("none"))
	addUint32Bytes(b, nil)
	b.AddUint32(1)
	addUint32Bytes(b, o.PubKey)
	addUint32Bytes(b, priv)
	return b.BytesOrPanic() // exactly sized; the parts came from a smaller file
}

// privateSectionInfo reads a decrypted private section far enough to
// check the checkints and find the comment. ok is false when the checkints
// differ (a wrong passphrase) or the section is malformed; comment is ""
// for key types whose layout is not known here.
func privateSectionInfo(p []byte) (ok bool, comment string) {
	var sec opensshPrivate
	if err := ssh.Unmarshal(p, &sec); err != nil || sec.Check1 != sec.Check2 {
		return false, ""
	}
	var (
		fields any
		cm     *string
	)
	switch sec.Keytype {
	case ssh.KeyAlgoED25519:
		k := new(opensshEd25519)
		fields, cm = k, &k.Comment
	case ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521:
		k := new(opensshECDSA)
		fields, cm = k, &k.Comment
	case ssh.KeyAlgoRSA:
		k := new(opensshRSA)
		fields, cm = k, &k.Comment
	case "ssh-dss":
		k := new(opensshDSA)
		fields, cm = k, &k.Comment
	default:
		return true, ""
	}
	if err := ssh.Unmarshal(sec.Rest, fields); err != nil {
		return true, ""
	}
	return true, *cm
}

// encodePEM writes a PEM block with 70-column lines into a buffer of
// exactly the right size, so no partial copies of data are left behind.
func encodePEM(typ string, data []byte) []byte {
	begin := "-----BEGIN " + typ + "-----\n"
	end := "-----END " + typ + "-----\n"
	n := base64.StdEncoding.EncodedLen(len(data))
	lines := (n + pemLineLen - 1) / pemLineLen
	out := make([]byte, len(begin)+n+lines+len(end))
	copy(out, begin)
	enc := out[len(begin) : len(begin)+n]
	base64.StdEncoding.Encode(enc, data)
	// Spread the base64 text over lines, from the last line backwards so
	// that nothing is overwritten before it is moved.
	body := out[len(begin) : len(begin)+n+lines]
	for i := lines - 1; i >= 0; i-- {
		start := i * pemLineLen
		stop := min(start+pemLineLen, n)
		dst := start + i
		copy(body[dst:], body[start:stop])
		body[dst+stop-start] = '\n'
	}
	copy(out[len(begin)+n+lines:], end)
	return out
}

// decodeOpenSSHPEM returns the container inside an "OPENSSH PRIVATE KEY"
// PEM block as written by encodePEM or ssh-keygen. The caller clears it.
func decodeOpenSSHPEM(p []byte) ([]byte, error) {
	begin := []byte("-----BEGIN " + pemTypeOpenSSH + "-----")
	end := []byte("-----END " + pemTypeOpenSSH + "-----")
	i := bytes.Index(p, begin)
	if i < 0 {
		return nil, errors.New("not an OpenSSH private key (no BEGIN OPENSSH PRIVATE KEY line)")
	}
	inner := p[i+len(begin):]
	j := bytes.Index(inner, end)
	if j < 0 {
		return nil, errors.New("OpenSSH private key has no END line")
	}
	inner = inner[:j]
	// The decoder skips '\r' and '\n'; nothing else may appear.
	out := make([]byte, base64.StdEncoding.DecodedLen(len(inner)))
	n, err := base64.StdEncoding.Decode(out, inner)
	if err != nil {
		clear(out)
		return nil, fmt.Errorf("OpenSSH private key is not valid base64: %w", err)
	}
	return out[:n], nil
}
