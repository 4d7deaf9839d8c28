package approvals

import (
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/knownhosts"
)

// A login whose destination has no name — the client never sent
// session-bind, or the host key is not in the host inventory — gets the
// strictest mode any host rule could give it, however known_hosts names
// the key.
func TestUnknownDestinationsAreTheStrictestCase(t *testing.T) {
	w := newWorld(t)
	prod, web, stranger := hostKey(t), hostKey(t), hostKey(t)
	w.nameHost("prod-db-1", "production", prod)
	w.nameHost("staging-web", "", web)
	// known_hosts, which any program can edit, names the stranger
	// "staging-web" and says nothing of prod.
	kh := filepath.Join(t.TempDir(), "known_hosts")
	os.WriteFile(kh, []byte("staging-web "+string(ssh.MarshalAuthorizedKey(stranger))), 0o600)
	p := *w.e.Policy()
	p.Hosts = knownhosts.Open([]string{kh})
	p.Rules = []Rule{{Class: "production", Mode: audit.ModePerCall}}
	w.e.SetPolicy(&p)

	mode := func(r *Request) (audit.Mode, CardView) {
		t.Helper()
		ch := w.decide(r)
		c := w.card()
		// Approved once: denials in a row would start a cooldown.
		w.answer(c.ID, VerdictOnce, 30)
		got(t, ch)
		return c.Mode, c
	}
	if m, c := mode(w.authTo(13, prod)); m != audit.ModePerCall || c.Destination.Classes[0] != "production" {
		t.Fatalf("production: %s %+v", m, c.Destination)
	}
	if m, _ := mode(w.authTo(13, web)); m != audit.ModeSession {
		t.Fatalf("a named host that is not production: %s", m)
	}
	m, c := mode(w.authTo(13, nil))
	if m != audit.ModePerCall || c.Unverified == "" || !strings.Contains(c.Text(), "UNKNOWN destination?") || !strings.Contains(c.Text(), "the client did not prove where it connects") {
		t.Fatalf("a login without session-bind: %s\n%s", m, c.Text())
	}
	m, c = mode(w.authTo(13, stranger))
	if m != audit.ModePerCall || len(c.Destination.Names) != 0 || c.Destination.KnownHosts[0] != "staging-web" || !strings.Contains(c.Text(), "not in the host inventory") {
		t.Fatalf("a key known_hosts calls staging-web: %s %+v", m, c.Destination)
	}
	if m, _ := mode(w.req(13)); m != audit.ModePerCall {
		t.Fatalf("data the agent cannot interpret: %s", m)
	}
	if m, _ := mode(w.sshsig(13)); m != audit.ModeSession {
		t.Fatalf("a commit signature logs in nowhere: %s", m)
	}
	// unknown_destination can only make it stricter.
	p.Unknown = audit.ModeDeny
	w.e.SetPolicy(&p)
	if d := w.e.Decide(t.Context(), w.authTo(13, nil)); d.Allow || d.Reason != audit.ReasonPolicyDeny {
		t.Fatalf("unknown_destination = deny: %+v", d)
	}
	p.Unknown = audit.ModeNone
	w.e.SetPolicy(&p)
	if m, _ := mode(w.authTo(13, nil)); m != audit.ModePerCall {
		t.Fatalf("unknown_destination = none made it looser: %s", m)
	}
}

func TestModeForAnyHost(t *testing.T) {
	key := Key{Fingerprint: "SHA256:abc", Comment: "deploy"}
	none := func() []program { return nil }
	for _, tt := range []struct {
		name    string
		def     audit.Mode
		rules   []Rule
		unknown audit.Mode
		want    audit.Mode
	}{
		{"no host rules: the default", audit.ModeSession, nil, "", audit.ModeSession},
		{"a per-call host rule", audit.ModeSession, []Rule{{Host: "prod-*", Mode: audit.ModePerCall}}, "", audit.ModePerCall},
		{"a class rule", audit.ModeSession, []Rule{{Class: "production", Mode: audit.ModeDeny}}, "", audit.ModeDeny},
		{"a looser host rule does not loosen", audit.ModePerCall, []Rule{{Host: "github.com", Mode: audit.ModeNone}}, "", audit.ModePerCall},
		{"a host rule for another key does not count", audit.ModeSession, []Rule{{Host: "prod-*", Key: "other", Mode: audit.ModeDeny}}, "", audit.ModeSession},
		{"a key rule still applies", audit.ModeSession, []Rule{{Key: "deploy", Mode: audit.ModePerCall}}, "", audit.ModePerCall},
		{"the floor", audit.ModeNone, nil, audit.ModePerCall, audit.ModePerCall},
		{"the floor never loosens", audit.ModeSession, []Rule{{Host: "prod-*", Mode: audit.ModeDeny}}, audit.ModeNone, audit.ModeDeny},
	} {
		p := &Policy{Mode: tt.def, Rules: tt.rules, Unknown: tt.unknown}
		if m := p.modeFor(&facts{anyHost: true, key: key, programs: none}, false); m != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, m, tt.want)
		}
	}
}

// A host that presents a certificate (sshd's HostCertificate, which ssh
// passes on in session-bind) is named by the key it certifies: the card
// and the record give that key's fingerprint, the one the host
// inventory lists and ssh-keygen -l prints on the host, never the hash
// of the certificate around it.
func TestHostCertificateNamedByItsKey(t *testing.T) {
	w := newWorld(t)
	_, hostPriv, _ := ed25519.GenerateKey(rand.Reader)
	_, caPriv, _ := ed25519.GenerateKey(rand.Reader)
	host, _ := ssh.NewPublicKey(hostPriv.Public())
	ca, _ := ssh.NewSignerFromKey(caPriv)
	cert := &ssh.Certificate{Key: host, CertType: ssh.HostCert, KeyId: "db-1", ValidPrincipals: []string{"db-1"}, ValidBefore: ssh.CertTimeInfinity}
	if err := cert.SignCert(rand.Reader, ca); err != nil {
		t.Fatal(err)
	}
	want := ssh.FingerprintSHA256(host)
	for _, named := range []bool{false, true} {
		if named {
			w.nameHost("db-1", "production", host)
		}
		r := w.authTo(13, cert)
		ch := w.decide(r)
		c := w.card()
		w.answer(c.ID, VerdictOnce, 30)
		got(t, ch)
		if c.Destination == nil || c.Destination.Fingerprint != want || !strings.Contains(c.Text(), "host key "+want) {
			t.Fatalf("in the inventory: %v; the card of a login to a host presenting a certificate of %s:\n%s", named, want, c.Text())
		}
		if named && (len(c.Destination.Names) != 1 || c.Destination.Names[0] != "db-1") {
			t.Fatalf("the card names %v", c.Destination.Names)
		}
		if r.Dest.Fingerprint() != want {
			t.Fatalf("the destination recorded is %s, want %s", r.Dest.Fingerprint(), want)
		}
	}
}

// Host names are matched as ssh matches them, whatever their case: a
// rule that spells a production host in capitals, or an inventory name
// in capitals, still asks every time, as DNS and ssh_config's Host take
// "Prod-DB-1" and "prod-db-1" for one host.
func TestHostRulesIgnoreCase(t *testing.T) {
	none := func() []program { return nil }
	for _, tt := range []struct{ rule, name string }{
		{"Prod-*", "prod-db-1"},
		{"prod-*", "PROD-DB-1"},
		{"db-[A-Z]", "db-b"},
		{"[10.0.0.5]:2222", "[10.0.0.5]:2222"},
	} {
		p := &Policy{Mode: audit.ModeSession, Rules: []Rule{{Host: tt.rule, Mode: audit.ModePerCall}}}
		if m := p.modeFor(&facts{names: []string{tt.name}, programs: none}, false); m != audit.ModePerCall {
			t.Errorf("host = %q, a host the inventory names %q: %s, want %s", tt.rule, tt.name, m, audit.ModePerCall)
		}
	}
}
