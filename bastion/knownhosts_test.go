package bastion

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/bastion/journal"
)

// The retry guard knows a host by the host key the connection verified.
// A host with two keys, both in known_hosts under one name, presents the
// same one whatever the order of the lines: rewriting known_hosts in
// another order (which trusts nothing new) does not make the host another
// one, and an identical retry of a command whose outcome is unknown is
// still asked about.
func TestRetryGuardDoesNotFollowTheOrderOfKnownHosts(t *testing.T) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	second, err := ssh.NewSignerFromKey(k)
	if err != nil {
		t.Fatal(err)
	}
	w := newWorldWith(t, nil, func(c *ssh.ServerConfig) { c.AddHostKey(second) })
	known := filepath.Join(os.Getenv("HOME"), "known_hosts")
	name := "[127.0.0.1]:" + strconv.Itoa(w.host.port()) + " "
	ed := name + string(ssh.MarshalAuthorizedKey(w.host.key.PublicKey()))
	ec := name + string(ssh.MarshalAuthorizedKey(second.PublicKey()))
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.exit(0) } })
	for _, lines := range []string{ec + ed, ed + ec} {
		if err := os.WriteFile(known, []byte(lines), 0o600); err != nil {
			t.Fatal(err)
		}
		hk, err := upstreamHostKey(w, "true")
		if err != nil {
			t.Fatal(err)
		}
		if hk != ssh.FingerprintSHA256(w.host.key.PublicKey()) {
			t.Fatalf("with known_hosts\n%sthe bastion verified %s, want the host's ed25519 key", lines, hk)
		}
	}

	sess := w.startRunning("deploy", nil)
	w.host.cut()
	sess.Wait()
	if e := w.ended("deploy"); e.Status() != journal.StatusUnknown {
		t.Fatalf("the cut command: %s", e.Status())
	}
	if err := os.WriteFile(known, []byte(ec+ed), 0o600); err != nil {
		t.Fatal(err)
	}
	w.denyRetries()
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.exit(0) } })
	if _, _, err := w.run("deploy", nil); err == nil || len(w.host.seen()) != 3 {
		t.Fatalf("an identical retry ran, after known_hosts was written in another order, with nobody asked (%d commands reached the host)", len(w.host.seen()))
	}
}

// upstreamHostKey runs command through the bastion and returns the host
// key fingerprint its journal entry says the connection verified.
func upstreamHostKey(w *world, command string) (string, error) {
	if _, _, err := w.run(command, nil); err != nil {
		return "", err
	}
	es := w.entries()
	return es[len(es)-1].Target.HostKey, nil
}

// hostCertifiedBy makes w's host present a certificate of its key, of
// this serial, signed by ca (in place of the one it presented), and
// known_hosts trust ca alone for it.
func hostCertifiedBy(t *testing.T, w *world, ca ssh.Signer, serial uint64) {
	t.Helper()
	c := &ssh.Certificate{Key: w.host.key.PublicKey(), Serial: serial, CertType: ssh.HostCert,
		ValidPrincipals: []string{"127.0.0.1"}, ValidBefore: ssh.CertTimeInfinity}
	if err := c.SignCert(rand.Reader, ca); err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewCertSigner(c, w.host.key)
	if err != nil {
		t.Fatal(err)
	}
	w.host.config.AddHostKey(s)
	line := "@cert-authority [127.0.0.1]:" + strconv.Itoa(w.host.port()) + " " + string(ssh.MarshalAuthorizedKey(ca.PublicKey()))
	if err := os.WriteFile(filepath.Join(os.Getenv("HOME"), "known_hosts"), []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A host that known_hosts trusts only through a certificate authority
// (@cert-authority, as smallstep's and Teleport's hosts are known) is
// verified by the certificate it presents, whatever the authority's own
// key type.
func TestBastionVerifiesAHostByItsAuthority(t *testing.T) {
	w := newWorld(t)
	hostCertifiedBy(t, w, newSigner(t), 1)
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.exit(0) } })
	if _, err := upstreamHostKey(w, "true"); err != nil {
		t.Fatalf("a host known by its authority: %v", err)
	}
}

// A host that presents a certificate is known by the key it certifies:
// a renewed certificate (a CA renews host certificates every day or
// month) does not make it another host, and an identical retry of a
// command whose outcome is unknown is still asked about.
func TestRetryGuardKnowsAHostByTheKeyItsCertificateCertifies(t *testing.T) {
	ca := newSigner(t)
	w := newWorld(t)
	hostCertifiedBy(t, w, ca, 1)
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.exit(0) } })
	hk, err := upstreamHostKey(w, "true")
	if err != nil {
		t.Fatal(err)
	}
	if hk != ssh.FingerprintSHA256(w.host.key.PublicKey()) {
		t.Fatalf("the journal names the host by %s, want the key its certificate certifies, %s", hk, ssh.FingerprintSHA256(w.host.key.PublicKey()))
	}

	sess := w.startRunning("deploy", nil)
	w.host.cut()
	sess.Wait()
	if e := w.ended("deploy"); e.Status() != journal.StatusUnknown {
		t.Fatalf("the cut command: %s", e.Status())
	}
	hostCertifiedBy(t, w, ca, 2)
	w.denyRetries()
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.exit(0) } })
	if _, _, err := w.run("deploy", nil); err == nil || len(w.host.seen()) != 2 {
		t.Fatalf("an identical retry ran once the host's certificate was renewed, with nobody asked (%d commands reached the host)", len(w.host.seen()))
	}
}
