package sshagent

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/binary"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/internal/sshkey"
)

// appendHop is the wire form of a parsed hop.
func appendHop(h Hop) []byte {
	b := ssh.Marshal(struct{ U, H, R string }{h.User, h.Hostname, ""})
	for _, k := range h.Keys {
		b = append(b, ssh.Marshal(struct {
			K  []byte
			CA bool
		}{k.Key.Marshal(), k.IsCA})...)
	}
	return b
}

// appendConstraints writes c the way ssh-add does: the form a parsed
// set of constraints must read back from.
func appendConstraints(b []byte, c *keyConstraints) []byte {
	if c.lifetime != 0 {
		b = binary.BigEndian.AppendUint32(append(b, constrainLifetime), c.lifetime)
	}
	if c.confirm {
		b = append(b, constrainConfirm)
	}
	ext := func(name string, body []byte) {
		b = append(b, constrainExtension)
		b = append(b, ssh.Marshal(struct{ N string }{name})...)
		b = append(b, body...)
	}
	if c.skProvider != "" {
		ext(ExtSKProvider, ssh.Marshal(struct{ P string }{c.skProvider}))
	}
	if c.hasDest {
		var cs []byte
		for _, d := range c.dest {
			cs = append(cs, ssh.Marshal(struct{ C []byte }{ssh.Marshal(struct{ F, T, R []byte }{appendHop(d.From), appendHop(d.To), nil})})...)
		}
		ext(ExtRestrictDestination, ssh.Marshal(struct{ D []byte }{cs}))
	}
	if c.hasCertsExt {
		var certs []byte
		for _, cert := range c.certs {
			certs = append(certs, ssh.Marshal(struct{ C []byte }{cert.Marshal()})...)
		}
		ext(ExtAssociatedCerts, ssh.Marshal(struct {
			O bool
			C []byte
		}{c.certOnly, certs}))
	}
	return b
}

// constraintSeeds are constraints as ssh-add sends them.
func constraintSeeds(t testing.TB) [][]byte {
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	host, _ := ssh.NewPublicKey(k.Public())
	ca := newHost(t)
	cert := &ssh.Certificate{Key: host, CertType: ssh.UserCert, ValidPrincipals: []string{"u"}, ValidBefore: ssh.CertTimeInfinity}
	if err := cert.SignCert(rand.Reader, ca.Signer); err != nil {
		t.Fatal(err)
	}
	dest := restrictTo([2][]byte{destHop("", ""), destHop("", "prod-db-1", host)}, [2][]byte{destHop("", "prod-db-1", host), destHop("deploy*", "staging", host, ca.PublicKey())})
	withCerts := appendConstraints(nil, &keyConstraints{hasCertsExt: true, certOnly: true, certs: []*ssh.Certificate{cert}})
	return [][]byte{
		{constrainLifetime, 0, 0, 0, 60, constrainConfirm},
		{constrainConfirm, constrainConfirm},
		{constrainLifetime, 0, 0, 0, 0},
		{constrainLifetime, 0, 0},
		dest,
		append(dest, dest...),
		withCerts,
		append(append([]byte{constrainConfirm}, withCerts...), dest...),
		append([]byte{constrainExtension}, ssh.Marshal(struct{ N, P string }{ExtSKProvider, "/usr/lib/libsk.so"})...),
		append([]byte{constrainExtension}, ssh.Marshal(struct{ N, P string }{"unknown@example.com", "x"})...),
		{99},
	}
}

// FuzzParseConstraints parses the constraints that follow a key in an
// add request. What parses stays within the bounds on hops and
// certificates, and written back as ssh-add writes it parses to the
// same constraints.
func FuzzParseConstraints(f *testing.F) {
	for _, s := range constraintSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := parseConstraints(bytes.Clone(b))
		if err != nil {
			if c != nil {
				t.Fatalf("constraints with an error: %v", err)
			}
			return
		}
		if len(c.dest) > 1024 || len(c.certs) > maxAssociatedCerts {
			t.Fatalf("%d hops and %d certificates kept", len(c.dest), len(c.certs))
		}
		for _, d := range c.dest {
			if len(d.To.User) > maxUserPatternBytes || d.From.User != "" || d.To.Hostname == "" || len(d.To.Keys) == 0 {
				t.Fatalf("a hop that should have been refused: %+v", d)
			}
		}
		again := appendConstraints(nil, c)
		c2, err := parseConstraints(bytes.Clone(again))
		if err != nil {
			t.Fatalf("%x parsed, written back as %x it does not: %v", b, again, err)
		}
		if again2 := appendConstraints(nil, c2); !bytes.Equal(again, again2) {
			t.Fatalf("%x parsed, written back as %x, which parses to %x", b, again, again2)
		}
	})
}

// FuzzParseSessionBind parses a session-bind request. What is accepted
// was signed by its host key, and the binding is its own copy, which
// the request's buffer, reused, does not change.
func FuzzParseSessionBind(f *testing.F) {
	host := newHost(f)
	f.Add(host.bind([]byte("session id"), false))
	f.Add(host.bind(bytes.Repeat([]byte{7}, 128), true))
	f.Add(host.bind(bytes.Repeat([]byte{7}, 129), true))
	f.Add(host.bind(nil, false))
	good := host.bind([]byte("sid"), false)
	f.Add(append(bytes.Clone(good), 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		buf := bytes.Clone(b)
		bd, err := parseSessionBind(buf)
		if err != nil {
			return
		}
		if len(bd.SessionID) == 0 || len(bd.SessionID) > maxSessionIDLen {
			t.Fatalf("a session id of %d bytes", len(bd.SessionID))
		}
		sid, key, raw := bytes.Clone(bd.SessionID), bd.HostKey.Marshal(), bytes.Clone(bd.raw)
		for i := range buf {
			buf[i] = ^buf[i]
		}
		if !bytes.Equal(sid, bd.SessionID) || !bytes.Equal(key, bd.HostKey.Marshal()) || !bytes.Equal(raw, bd.raw) || !bytes.Equal(raw, b) {
			t.Fatal("the binding changed with the request's buffer")
		}
	})
}

// FuzzParseSignData recognises the data a client asks a key to sign. A
// userauth request is recognised only for the key that signs, and an
// SSHSIG only with a namespace.
func FuzzParseSignData(f *testing.F) {
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	key, _ := ssh.NewPublicKey(k.Public())
	host := newHost(f)
	f.Add(userauth([]byte("sid"), "git", key, nil))
	f.Add(userauth([]byte("sid"), "git", key, host.PublicKey()))
	f.Add(userauth([]byte("sid"), "git", host.PublicKey(), nil))
	f.Add(append([]byte("SSHSIG"), ssh.Marshal(sshsigMsg{Namespace: "git", HashAlg: "sha512", Hash: make([]byte, 64)})...))
	f.Add(append([]byte("SSHSIG"), ssh.Marshal(sshsigMsg{HashAlg: "sha512"})...))
	f.Add([]byte("anything"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := parseSignData(data, key)
		if err != nil {
			return
		}
		switch d.kind {
		case signSSHSig:
			if d.namespace == "" || !bytes.HasPrefix(data, []byte("SSHSIG")) {
				t.Fatalf("an SSHSIG without a namespace: %+v", d)
			}
		case signUserauth:
			var m userauthMsg
			if ssh.Unmarshal(data, &m) != nil || !m.HasSig || m.Type != msgUserAuthRequest || !samePublic(d.named, key) {
				t.Fatalf("a userauth request recognised in %x: %+v", data, d)
			}
			if (d.hostKey != nil) != (m.Method == "publickey-hostbound-v00@openssh.com") {
				t.Fatalf("method %q with host key %v", m.Method, d.hostKey)
			}
		}
	})
}

// FuzzParseAddedKey parses the key of an add request. A private key
// accepted is one sshkey.Check accepts (DSA aside, refused later) and a
// sign request can name, a certificate certifies it, and the bytes left
// are the request's tail.
func FuzzParseAddedKey(f *testing.F) {
	for _, m := range addMessages(f) {
		f.Add(m[1:])
	}
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ecPub, _ := ssh.NewPublicKey(&ec.PublicKey)
	f.Add(ssh.Marshal(struct {
		T, C string
		Q, D []byte
		Cm   string
	}{ssh.KeyAlgoECDSA256, "nistp256", elliptic.Marshal(elliptic.P256(), ec.X, ec.Y), ec.D.Bytes(), "ec"}))
	ca := newHost(f)
	cert := &ssh.Certificate{Key: ecPub, CertType: ssh.UserCert, ValidPrincipals: []string{"u"}, ValidBefore: uint64(time.Now().Add(time.Hour).Unix())}
	if err := cert.SignCert(rand.Reader, ca.Signer); err != nil {
		f.Fatal(err)
	}
	f.Add(ssh.Marshal(struct {
		T    string
		Cert []byte
		D    []byte
		Cm   string
	}{cert.Type(), cert.Marshal(), ec.D.Bytes(), "ec cert"}))
	f.Fuzz(func(t *testing.T, b []byte) {
		k, rest, err := parseAddedKey(bytes.Clone(b))
		if err != nil {
			return
		}
		if len(rest) > len(b) || !bytes.HasSuffix(b, rest) {
			t.Fatalf("a tail of %d bytes left from %d", len(rest), len(b))
		}
		if (k.priv == nil) == (k.sk == nil) {
			t.Fatalf("a key both or neither held and on a security key: %+v", k)
		}
		var pub ssh.PublicKey
		if k.sk != nil {
			pub = k.sk.pub
		} else {
			s, err := ssh.NewSignerFromKey(k.priv)
			if err != nil {
				t.Fatalf("an accepted key that cannot sign: %v", err)
			}
			pub = s.PublicKey()
			if pub.Type() != ssh.KeyAlgoDSA {
				if _, err := sshkey.Check(k.priv); err != nil {
					t.Fatalf("an accepted key that sshkey.Check refuses: %v", err)
				}
			}
		}
		if k.cert != nil && !samePublic(k.cert, pub) {
			t.Fatal("a certificate for another key")
		}
		if _, err := parsePublicKey(pub.Marshal()); err != nil {
			t.Fatalf("an accepted key that a sign request cannot name: %v", err)
		}
	})
}
