package bastion

import (
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/bastion/journal"
)

// The bastion offers the post-quantum hybrid first: a host that speaks it
// gets it, and the log says so.
func TestUpstreamKexIsPostQuantumWhenTheHostOffersIt(t *testing.T) {
	w := newWorld(t)
	w.host.set(func(h *testHost) { h.handle = (*hostSession).echo })
	if out, _, err := w.run("cat", []byte("hi")); err != nil || out != "hi" {
		t.Fatalf("run: %q %v", out, err)
	}
	if log := w.logs.String(); !strings.Contains(log, "kex="+ssh.KeyExchangeMLKEM768X25519) || !strings.Contains(log, "kex_pq=true") {
		t.Fatalf("the log does not show the post-quantum exchange:\n%s", log)
	}
}

// A host with only classical exchanges (as OpenSSH 8.5 to 9.8, whose
// hybrid x/crypto lacks, look to the bastion): the command runs, and the
// log warns; with require_pq_kex the host is refused, saying why, and
// nothing runs.
func TestUpstreamKexWithoutPostQuantum(t *testing.T) {
	classical := func(c *ssh.ServerConfig) { c.KeyExchanges = []string{ssh.KeyExchangeCurve25519} }
	w := newWorldWith(t, nil, classical)
	w.host.set(func(h *testHost) { h.handle = (*hostSession).echo })
	if out, _, err := w.run("cat", []byte("hi")); err != nil || out != "hi" {
		t.Fatalf("run: %q %v", out, err)
	}
	if log := w.logs.String(); !strings.Contains(log, "kex="+ssh.KeyExchangeCurve25519) || !strings.Contains(log, "kex_pq=false") || !strings.Contains(log, "level=WARN") {
		t.Fatalf("the log does not warn of the classical exchange:\n%s", log)
	}

	w = newWorldWith(t, func(c *Config) { c.RequirePQKex = true }, classical)
	w.host.set(func(h *testHost) { h.handle = (*hostSession).echo })
	out, errOut, err := w.run("cat", []byte("hi"))
	if err == nil || out != "" {
		t.Fatalf("a host without a post-quantum exchange was let through under require_pq_kex: %q %v", out, err)
	}
	if !strings.Contains(errOut, "require_pq_kex") {
		t.Fatalf("the refusal does not tell the client why: %q", errOut)
	}
	if w.host.logins() != 0 {
		t.Fatal("the bastion logged in to the host")
	}
	if e := w.only(); e.Status() != journal.StatusRetrySafe {
		t.Fatalf("the refused command is journaled as %s", e.Status())
	}
}

// The offer never includes the SHA-1 exchange x/crypto has by default.
func TestKexOfferHasNoSHA1(t *testing.T) {
	for _, pq := range []bool{false, true} {
		offer := kexOffer(pq)
		if offer[0] != ssh.KeyExchangeMLKEM768X25519 {
			t.Errorf("require_pq=%v: offer starts with %s", pq, offer[0])
		}
		for _, k := range offer {
			if strings.Contains(k, "sha1") {
				t.Errorf("require_pq=%v: offers %s", pq, k)
			}
			if pq && !IsPQKex(k) {
				t.Errorf("require_pq: offers the classical %s", k)
			}
		}
	}
}
