package vault

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
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
// decrypts aes256-ctr and aes256-cbc; the helpers here recover the comment
// and decrypt the other AES modes ssh-keygen can write.
const (
	opensshMagic   = "openssh-key-v1\x00"
	pemTypeOpenSSH = "OPENSSH PRIVATE KEY"
	pemLineLen     = 70 // what ssh-keygen writes
)

type opensshOuter struct {
	cipher  string
	kdf     string
	kdfOpts []byte
	pub     []byte
	priv    []byte // the private section, encrypted unless cipher is "none"
	rest    []byte // bytes after the private section (an AEAD tag)
}

func sshString(c *cursor) []byte {
	return c.take(int(c.u32()))
}

func appendSSHString(b, s []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// parseOpenSSHOuter parses the container. The returned slices alias raw.
func parseOpenSSHOuter(raw []byte) (*opensshOuter, error) {
	if !bytes.HasPrefix(raw, []byte(opensshMagic)) {
		return nil, errors.New("not an openssh-key-v1 private key")
	}
	c := cursor{b: raw[len(opensshMagic):]}
	o := &opensshOuter{
		cipher:  string(sshString(&c)),
		kdf:     string(sshString(&c)),
		kdfOpts: sshString(&c),
	}
	n := c.u32()
	o.pub = sshString(&c)
	o.priv = sshString(&c)
	if c.short {
		return nil, errors.New("openssh private key is truncated")
	}
	if n != 1 {
		return nil, fmt.Errorf("openssh private key file holds %d keys; only single-key files are supported", n)
	}
	o.rest = c.b
	return o, nil
}

// marshalPlain builds an unencrypted container around a decrypted private
// section. The caller clears the result.
func (o *opensshOuter) marshalPlain(priv []byte) []byte {
	out := make([]byte, 0, len(opensshMagic)+4*6+8+len(o.pub)+len(priv))
	out = append(out, opensshMagic...)
	out = appendSSHString(out, []byte("none"))
	out = appendSSHString(out, []byte("none"))
	out = appendSSHString(out, nil)
	out = binary.BigEndian.AppendUint32(out, 1)
	out = appendSSHString(out, o.pub)
	return appendSSHString(out, priv)
}

// privateSectionInfo reads a decrypted private section far enough to
// check the checkints and find the comment. ok is false when the checkints
// differ (a wrong passphrase) or the section is malformed; comment is ""
// for key types whose layout is not known here.
func privateSectionInfo(p []byte) (ok bool, comment string) {
	c := cursor{b: p}
	c1, c2 := c.u32(), c.u32()
	keytype := string(sshString(&c))
	if c.short || c1 != c2 {
		return false, ""
	}
	var fields int
	switch keytype {
	case "ssh-ed25519":
		fields = 2 // public, private||public
	case "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521":
		fields = 3 // curve, public point, scalar
	case "ssh-rsa":
		fields = 6 // n, e, d, iqmp, p, q
	case "ssh-dss":
		fields = 5 // p, q, g, y, x
	default:
		return true, ""
	}
	for range fields {
		sshString(&c)
	}
	cm := sshString(&c)
	if c.short {
		return true, ""
	}
	return true, string(cm)
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
