package vault

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

func certFor(t testing.TB, k Key, before time.Time) *ssh.Certificate {
	t.Helper()
	pub, err := k.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	_, caKey, _ := ed25519.GenerateKey(rand.Reader)
	ca, _ := ssh.NewSignerFromKey(caKey)
	c := &ssh.Certificate{Key: pub, CertType: ssh.UserCert, KeyId: "id", ValidPrincipals: []string{"me"}, ValidAfter: 0, ValidBefore: uint64(before.Unix())}
	if err := c.SignCert(rand.Reader, ca); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCertificatesBesideTheirKey(t *testing.T) {
	v, path := newTestVault(t)
	k := newEd25519Key(t, "with-cert")
	other := newEd25519Key(t, "other")
	if err := v.AddKey(k); err != nil {
		t.Fatal(err)
	}
	// Without certificates the body stays at version 1.
	p, err := encodeBody(&body{keys: v.Keys()})
	if err != nil || p[0] != bodyVersion {
		t.Fatalf("body without certificates: version %d (%v)", p[0], err)
	}
	if _, err := v.AddCertificate(certFor(t, other, time.Now().Add(time.Hour))); !errors.Is(err, ErrNoKeyForCert) {
		t.Fatalf("certificate of a key not in the vault: %v", err)
	}
	if _, err := v.AddCertificate(certFor(t, k, time.Now().Add(-time.Second))); err == nil {
		t.Fatal("an expired certificate was added")
	}
	c1 := certFor(t, k, time.Now().Add(time.Hour))
	if comment, err := v.AddCertificate(c1); err != nil || comment != "with-cert" {
		t.Fatalf("add: %q %v", comment, err)
	}
	if _, err := v.AddCertificate(c1); err != nil {
		t.Fatal(err)
	}
	v = saveAndReopen(t, v, path)
	infos, err := v.KeyInfos()
	if err != nil {
		t.Fatal(err)
	}
	last := len(infos) - 1
	if len(infos[0].Certs) != 0 || len(infos[last].Certs) != 1 || !bytes.Equal(infos[last].Certs[0].Marshal(), c1.Marshal()) {
		t.Fatalf("after reopening: %+v", infos)
	}
	// A certificate that expired is dropped when another is added.
	keys := v.Keys()
	short := certFor(t, k, time.Now().Add(1100*time.Millisecond))
	if _, err := v.AddCertificate(short); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1200 * time.Millisecond)
	c2 := certFor(t, k, time.Now().Add(time.Hour))
	if _, err := v.AddCertificate(c2); err != nil {
		t.Fatal(err)
	}
	if got := v.Keys()[last].Certs; len(got) != 2 || !bytes.Equal(got[0], c1.Marshal()) || !bytes.Equal(got[1], c2.Marshal()) {
		t.Fatalf("expired certificate kept or others lost: %d", len(got))
	}
	keys[0].Wipe()

	// A version 2 body round-trips, and one without certificates is not
	// canonical.
	p, err = encodeBody(&body{keys: v.Keys()})
	if err != nil || p[0] != bodyVersion2 {
		t.Fatalf("version %d (%v)", p[0], err)
	}
	b, err := decodeBody(p)
	if err != nil || len(b.keys[last].Certs) != 2 {
		t.Fatalf("decode: %v", err)
	}
	b.keys[last].Certs = nil
	plain, _ := encodeBody(b)
	plain[0] = bodyVersion2
	if _, err := decodeBody(append(plain[:0:0], plain...)); err == nil {
		t.Fatal("a version 2 body without certificates was accepted")
	}
	// A certificate larger than the vault keeps is refused when it is
	// added, not when the vault is saved.
	huge := certFor(t, k, time.Now().Add(time.Hour))
	huge.ValidPrincipals = []string{string(make([]byte, maxCertLen))}
	_, caKey, _ := ed25519.GenerateKey(rand.Reader)
	ca, _ := ssh.NewSignerFromKey(caKey)
	if err := huge.SignCert(rand.Reader, ca); err != nil {
		t.Fatal(err)
	}
	if _, err := v.AddCertificate(huge); err == nil {
		t.Fatal("a certificate larger than the vault keeps was added")
	}
	big := newEd25519Key(t, "big")
	bigPub, _ := big.PublicKey()
	huge.Key = bigPub
	if err := huge.SignCert(rand.Reader, ca); err != nil {
		t.Fatal(err)
	}
	big.Certs = [][]byte{huge.Marshal()}
	if err := v.AddKey(big); err == nil {
		t.Fatal("a key with a certificate larger than the vault keeps was added")
	}
	if err := v.Save(); err != nil {
		t.Fatal(err)
	}
	// A certificate for another key is refused by AddKey.
	bad := newEd25519Key(t, "bad")
	bad.Certs = [][]byte{certFor(t, other, time.Now().Add(time.Hour)).Marshal()}
	if err := v.AddKey(bad); err == nil {
		t.Fatal("a key with another key's certificate was added")
	}
}
