package sshagent

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// newCert certifies pub with a fresh CA, valid until before (0: forever).
func newCert(t testing.TB, pub ssh.PublicKey, typ uint32, before time.Time) *ssh.Certificate {
	t.Helper()
	_, caKey, _ := ed25519.GenerateKey(rand.Reader)
	ca, _ := ssh.NewSignerFromKey(caKey)
	c := &ssh.Certificate{Key: pub, CertType: typ, KeyId: "test", ValidPrincipals: []string{"me"}, ValidBefore: ssh.CertTimeInfinity}
	if !before.IsZero() {
		c.ValidBefore = uint64(before.Unix())
	}
	if err := c.SignCert(rand.Reader, ca); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCertificateAndPlainKey: ssh with CertificateFile asks the agent to
// sign with the plain key it holds while the userauth request names the
// certificate; sshd's HostKeyAgent asks for a host certificate while the
// agent holds the plain host key; and the reverse of both.
func TestCertificateAndPlainKey(t *testing.T) {
	for name, k := range testKeys(t) {
		t.Run(name, func(t *testing.T) {
			ts := startServer(t)
			ag, _ := ts.client(t)
			s, _ := ssh.NewSignerFromKey(k)
			pub := s.PublicKey()
			cert := newCert(t, pub, ssh.UserCert, time.Time{})
			host := newHost(t)
			sid := []byte("session-identifier-for-a-cert-login")

			// Only the plain key is held.
			if err := ag.Add(agent.AddedKey{PrivateKey: k, Comment: "plain"}); err != nil {
				t.Fatal(err)
			}
			ag2, _ := ts.client(t)
			if _, err := ag2.Extension(ExtSessionBind, host.bind(sid, false)); err != nil {
				t.Fatal(err)
			}
			data := userauth(sid, "me", cert, host.PublicKey())
			sig, err := ag2.Sign(pub, data)
			if err != nil {
				t.Fatalf("plain key held, userauth names its certificate: %v", err)
			}
			if err := pub.Verify(data, sig); err != nil {
				t.Fatal(err)
			}
			r := ts.dec.last()
			if r.Purpose != "auth" || r.Dest == nil {
				t.Fatalf("a certificate login is not seen as a userauth request: %+v", r)
			}
			// The card shows the certificate the login presents.
			if c := r.Key.Cert; c == nil || c.KeyID != "test" || len(c.Principals) != 1 || c.Principals[0] != "me" || c.CA != ssh.FingerprintSHA256(cert.SignatureKey) {
				t.Fatalf("the decision was not told of the certificate the login presents: %+v", r.Key.Cert)
			}
			// HostKeyAgent: asked for the certificate, signs with the key.
			sig, err = ag.Sign(cert, []byte("exchange hash"))
			if err != nil {
				t.Fatalf("plain key held, asked for its certificate: %v", err)
			}
			if err := cert.Verify([]byte("exchange hash"), sig); err != nil {
				t.Fatal(err)
			}

			// Only the certificate is held.
			if err := ag.RemoveAll(); err != nil {
				t.Fatal(err)
			}
			if err := ag.Add(agent.AddedKey{PrivateKey: k, Certificate: cert, Comment: "cert"}); err != nil {
				t.Fatal(err)
			}
			if l, _ := ag.List(); len(l) != 1 || l[0].Format != cert.Type() {
				t.Fatalf("listed %v", l)
			}
			ag3, _ := ts.client(t)
			ag3.Extension(ExtSessionBind, host.bind(sid, false))
			data = userauth(sid, "me", pub, host.PublicKey())
			if sig, err = ag3.Sign(pub, data); err != nil {
				t.Fatalf("certificate held, asked for the plain key: %v", err)
			}
			if err := pub.Verify(data, sig); err != nil {
				t.Fatal(err)
			}
			if c := ts.dec.last().Key.Cert; c != nil {
				t.Fatalf("a login with the plain key was shown a certificate: %+v", c)
			}

			// A userauth request for another key stays refused.
			_, other, _ := ed25519.GenerateKey(rand.Reader)
			op, _ := ssh.NewPublicKey(other.Public())
			ag4, _ := ts.client(t)
			ag4.Extension(ExtSessionBind, host.bind(sid, false))
			if _, err := ag4.Sign(pub, userauth(sid, "me", newCert(t, op, ssh.UserCert, time.Time{}), host.PublicKey())); err == nil {
				t.Fatal("signed a userauth request that names a certificate of another key")
			}
		})
	}
}

func TestCertificateExpiry(t *testing.T) {
	ts := startServer(t)
	ag, _ := ts.client(t)
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	pub, _ := ssh.NewPublicKey(k.Public())
	expired := newCert(t, pub, ssh.UserCert, time.Now().Add(-time.Minute))
	if err := ag.Add(agent.AddedKey{PrivateKey: k, Certificate: expired}); err == nil {
		t.Fatal("an expired certificate was added")
	}
	soon := newCert(t, pub, ssh.UserCert, time.Now().Add(2*time.Second))
	if err := ag.Add(agent.AddedKey{PrivateKey: k, Certificate: soon}); err != nil {
		t.Fatal(err)
	}
	id, err := ts.srv.Keys.Lookup(soon)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Unix(int64(soon.ValidBefore), 0); !id.Expires.Equal(want) {
		t.Fatalf("lifetime %v, want the certificate's end %v", id.Expires, want)
	}
	// A longer ssh-add -t lifetime does not outlive the certificate.
	keys := &Keyring{}
	id2, _ := NewIdentity(k, soon, "")
	id2.Expires = time.Now().Add(time.Hour)
	if err := keys.Add(id2); err != nil || !id2.Expires.Equal(time.Unix(int64(soon.ValidBefore), 0)) {
		t.Fatalf("lifetime not capped: %v %v", id2.Expires, err)
	}
	id3, _ := NewIdentity(k, expired, "")
	if err := keys.Add(id3); !errors.Is(err, ErrCertExpired) {
		t.Fatalf("expired certificate: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		l, _ := ag.List()
		if len(l) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the certificate was not dropped at its expiry")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The listing hides an expired key at once; its timer wipes it.
	for {
		ts.srv.Keys.mu.RLock()
		wiped := id.signer == nil
		ts.srv.Keys.mu.RUnlock()
		if wiped {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the expired certificate's key was not wiped")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A card shows a certificate's CA only where the CA's signature is there:
// a requester names the certificate, and may make one up around a key
// the agent holds, naming any CA.
func TestKeyFactsShowTheCAOnlyWhenItSigned(t *testing.T) {
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	pub, _ := ssh.NewPublicKey(k.Public())
	signed := newCert(t, pub, ssh.UserCert, time.Time{})
	if _, c := keyFacts(signed); c == nil || c.CA != ssh.FingerprintSHA256(signed.SignatureKey) {
		t.Fatalf("a CA's certificate: %+v", c)
	}
	madeUp := *signed
	madeUp.KeyId, madeUp.ValidPrincipals = "readonly-ci", []string{"ci"}
	if _, c := keyFacts(&madeUp); c == nil || c.CA != "" || c.KeyID != "readonly-ci" {
		t.Fatalf("a certificate whose signature does not verify shows CA %+v", c)
	}
	unsigned := *signed
	unsigned.Signature = nil
	if _, c := keyFacts(&unsigned); c == nil || c.CA != "" {
		t.Fatalf("a certificate without a signature shows CA %+v", c)
	}
}
