package sshagent

import (
	"bytes"
	"errors"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/postern/postern/approvals"
)

// What a sign request's data turned out to be.
type signKind int

const (
	signOther    signKind = iota // opaque data
	signUserauth                 // an SSH user authentication request
	signSSHSig                   // an SSHSIG blob (ssh-keygen -Y sign, git commit signing)
)

// purpose is what a request of kind k is for, as cards and records say
// it.
func (k signKind) purpose() approvals.Purpose {
	switch k {
	case signUserauth:
		return approvals.PurposeAuth
	case signSSHSig:
		return approvals.PurposeSSHSig
	}
	return approvals.PurposeOther
}

// signData is what the agent learns from the bytes it is asked to sign.
type signData struct {
	kind      signKind
	sessionID []byte        // userauth
	user      string        // userauth: the account the client claims
	named     ssh.PublicKey // userauth: the key or certificate the request names
	hostKey   ssh.PublicKey // userauth with publickey-hostbound-v00@openssh.com
	namespace string        // SSHSIG
	hashAlg   string        // SSHSIG: the message's hash, by algorithm
	hash      []byte
}

const msgUserAuthRequest = 50

type userauthMsg struct {
	SessionID []byte
	Type      byte
	User      string
	Service   string
	Method    string
	HasSig    bool
	Algo      string
	PubKey    []byte
	Rest      []byte `ssh:"rest"`
}

type sshsigMsg struct {
	Namespace string
	Reserved  []byte
	HashAlg   string
	Hash      []byte
}

// maxNamespace bounds an SSHSIG namespace, which a card shows whole:
// far above the short words (git, file) signatures are made in.
const maxNamespace = 255

// sshsigHashes are the hash algorithms an SSHSIG signature may name,
// with the length of their hash (OpenSSH's sshsig.c).
var sshsigHashes = map[string]int{"sha256": 32, "sha512": 64}

// plainKey returns the public key a certificate certifies, or key itself.
// A key that only carries its wire form (agent.Key) is parsed first.
func plainKey(key ssh.PublicKey) ssh.PublicKey {
	if _, ok := key.(*agent.Key); ok {
		if k, err := ssh.ParsePublicKey(key.Marshal()); err == nil {
			key = k
		}
	}
	switch c := key.(type) {
	case *ssh.Certificate:
		return c.Key
	case *dsaCertKey:
		return c.key
	}
	return key
}

// keyFacts returns what a card shows of key beyond its fingerprint: a
// security key's application, from its public half, and the
// certificate's key id, principals and CA when key is a certificate.
func keyFacts(key ssh.PublicKey) (application string, cert *approvals.Cert) {
	if _, ok := key.(*agent.Key); ok {
		if k, err := ssh.ParsePublicKey(key.Marshal()); err == nil {
			key = k
		}
	}
	if c, ok := key.(*ssh.Certificate); ok {
		cert = &approvals.Cert{KeyID: c.KeyId, Principals: c.ValidPrincipals}
		// The requester names the certificate: its CA is shown only
		// where the CA's signature is there.
		if certSigned(c) {
			cert.CA = ssh.FingerprintSHA256(c.SignatureKey)
		}
	}
	plain := plainKey(key)
	switch plain.Type() {
	case ssh.KeyAlgoSKECDSA256:
		var m struct{ Type, Curve, Point, Application string }
		if ssh.Unmarshal(plain.Marshal(), &m) == nil {
			application = m.Application
		}
	case ssh.KeyAlgoSKED25519:
		var m struct{ Type, Key, Application string }
		if ssh.Unmarshal(plain.Marshal(), &m) == nil {
			application = m.Application
		}
	}
	return application, cert
}

// certSigned reports whether c's signature verifies with the CA key it
// names (its validity and principals are the server's to judge).
func certSigned(c *ssh.Certificate) bool {
	if c.SignatureKey == nil || c.Signature == nil {
		return false
	}
	unsigned := *c
	unsigned.Signature = nil
	b := unsigned.Marshal()
	// The signature covers the certificate up to its signature field,
	// which Marshal writes last (here empty: a zero length).
	return c.SignatureKey.Verify(b[:len(b)-4], c.Signature) == nil
}

// samePublic reports whether a and b are the same public key, each
// possibly wrapped in a certificate.
func samePublic(a, b ssh.PublicKey) bool {
	return bytes.Equal(plainKey(a).Marshal(), plainKey(b).Marshal())
}

// parseSignData recognises the two kinds of data OpenSSH asks an agent to
// sign. key is the key that will sign; a userauth request for another key
// is not recognised as one. With an error, the kind is what the data
// said it was, for the refusal's record.
func parseSignData(data []byte, key ssh.PublicKey) (signData, error) {
	if rest, ok := bytes.CutPrefix(data, []byte("SSHSIG")); ok {
		var m sshsigMsg
		if err := ssh.Unmarshal(rest, &m); err != nil || m.Namespace == "" {
			return signData{kind: signSSHSig}, errors.New("malformed SSHSIG data")
		}
		if len(m.Namespace) > maxNamespace {
			return signData{kind: signSSHSig}, errors.New("malformed SSHSIG data: a namespace longer than 255 bytes")
		}
		// OpenSSH reads the namespace as a C string, in ssh-agent as in
		// ssh-keygen -Y verify: one with a NUL is refused there, and
		// would be shown here as what no verifier checks.
		if strings.IndexByte(m.Namespace, 0) >= 0 {
			return signData{kind: signSSHSig}, errors.New("malformed SSHSIG data: a NUL byte in the namespace")
		}
		// What ssh-keygen -Y sign sends and -Y verify accepts: the
		// message's SHA-256 or SHA-512 hash, nothing of another size
		// under a card that shows the namespace alone.
		if n, ok := sshsigHashes[m.HashAlg]; !ok || len(m.Hash) != n {
			return signData{kind: signSSHSig}, errors.New("malformed SSHSIG data: not a SHA-256 or SHA-512 hash of the message")
		}
		// ssh-keygen sends the reserved field empty and -Y verify
		// checks a signature with it empty: bytes there would be
		// signed under a card that shows none of them.
		if len(m.Reserved) != 0 {
			return signData{kind: signSSHSig}, errors.New("malformed SSHSIG data: a reserved field that is not empty")
		}
		return signData{kind: signSSHSig, namespace: m.Namespace, hashAlg: m.HashAlg, hash: m.Hash}, nil
	}
	var m userauthMsg
	if err := ssh.Unmarshal(data, &m); err != nil || m.Type != msgUserAuthRequest || !m.HasSig {
		return signData{kind: signOther}, nil
	}
	named, err := parsePublicKey(m.PubKey)
	if err != nil {
		return signData{kind: signUserauth}, errors.New("malformed key in userauth request")
	}
	// ssh signs for a certificate (CertificateFile) with the plain key
	// the agent holds, and the reverse: as OpenSSH does, the public
	// halves are compared.
	if !samePublic(named, key) {
		return signData{kind: signUserauth}, errors.New("userauth request names another key")
	}
	d := signData{kind: signUserauth, sessionID: m.SessionID, user: m.User, named: named}
	switch m.Method {
	case "publickey":
		if len(m.Rest) != 0 {
			return signData{kind: signUserauth}, errors.New("trailing data after userauth request")
		}
	case "publickey-hostbound-v00@openssh.com":
		var hb struct {
			HostKey []byte
			Rest    []byte `ssh:"rest"`
		}
		if err := ssh.Unmarshal(m.Rest, &hb); err != nil || len(hb.Rest) != 0 {
			return signData{kind: signUserauth}, errors.New("malformed hostbound userauth request")
		}
		hk, err := ssh.ParsePublicKey(hb.HostKey)
		if err != nil {
			return signData{kind: signUserauth}, errors.New("malformed host key in userauth request")
		}
		d.hostKey = hk
	default:
		return signData{kind: signOther}, nil
	}
	return d, nil
}
