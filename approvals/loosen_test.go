package approvals

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/internal/config"
)

func TestLoosening(t *testing.T) {
	base := config.Defaults()
	base.Rules = []config.Rule{{Host: "prod-*", Approval: "per-call"}, {Exe: "*/trusted", Approval: "none"}}
	base.SessionLifetime = config.Duration{Duration: time.Hour}
	base.UnknownDestination = "per-call"
	base.SessionScope = string(ScopeDestination)
	base.Run.Hide = []string{"~/.aws", "~/.gnupg"}
	base.Run.ReadOnly = nil
	// known_hosts names nothing (the host inventory does); a file with
	// @revoked lines refuses keys, so dropping it loosens.
	dir := t.TempDir()
	plain, revoking := filepath.Join(dir, "plain"), filepath.Join(dir, "revoking")
	const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
	os.WriteFile(plain, []byte("host-a "+key+"\n"), 0o600)
	os.WriteFile(revoking, []byte("@revoked * "+key+"\n"), 0o600)
	base.KnownHosts = []string{plain, revoking}
	with := func(f func(*config.File)) config.File {
		c := base
		c.Rules = append([]config.Rule(nil), base.Rules...)
		c.Run.ReadWrite = append([]string(nil), base.Run.ReadWrite...)
		f(&c)
		return c
	}
	for _, c := range []struct {
		name  string
		f     config.File
		loose string // a word of the change listed, or "" for none
	}{
		{"same", base, ""},
		{"stricter default", with(func(c *config.File) { c.Approval = "per-call" }), ""},
		{"weaker default", with(func(c *config.File) { c.Approval = "none" }), "approval: session → none"},
		{"strict rule removed", with(func(c *config.File) { c.Rules = c.Rules[1:] }), `rule removed: host = "prod-*": per-call`},
		{"lax rule removed", with(func(c *config.File) { c.Rules = c.Rules[:1] }), ""},
		{"strict rule widened", with(func(c *config.File) { c.Rules[0].Host = "prod-db" }), "rule removed"},
		{"strict rule added", with(func(c *config.File) { c.Rules = append(c.Rules, config.Rule{Key: "x", Approval: "deny"}) }), ""},
		{"lax rule added", with(func(c *config.File) { c.Rules = append(c.Rules, config.Rule{Host: "dev-*", Approval: "none"}) }), `rule added: host = "dev-*": none`},
		{"rules reordered", with(func(c *config.File) { c.Rules[0], c.Rules[1] = c.Rules[1], c.Rules[0] }), ""},
		{"known_hosts added", with(func(c *config.File) { c.KnownHosts = append(c.KnownHosts, "/other") }), ""},
		{"known_hosts without @revoked dropped", with(func(c *config.File) { c.KnownHosts = []string{revoking} }), ""},
		{"known_hosts with @revoked dropped", with(func(c *config.File) { c.KnownHosts = []string{plain} }), "known_hosts removed, with its @revoked lines: " + strconv.Quote(revoking)},
		{"unknown_destination stricter", with(func(c *config.File) { c.UnknownDestination = "deny" }), ""},
		{"unknown_destination weaker", with(func(c *config.File) { c.UnknownDestination = "session" }), `unknown_destination: "per-call" → "session"`},
		{"unknown_destination removed", with(func(c *config.File) { c.UnknownDestination = "" }), `unknown_destination: "per-call" → ""`},
		{"timeout", with(func(c *config.File) { c.CardTimeout = config.Duration{Duration: time.Minute * 5} }), ""},
		{"lifetime longer", with(func(c *config.File) { c.SessionLifetime = config.Duration{Duration: 2 * time.Hour} }), "session_lifetime: 1h0m0s → 2h0m0s"},
		{"lifetime removed", with(func(c *config.File) { c.SessionLifetime = config.Duration{} }), "→ unlimited"},
		{"run writes more", with(func(c *config.File) { c.Run.ReadWrite = append(c.Run.ReadWrite, "~") }), `[run] read_write added: "~"`},
		{"run writes less", with(func(c *config.File) { c.Run.ReadWrite = nil }), ""},
		{"run reads more", with(func(c *config.File) { c.Run.ReadOnly = []string{"~/.ssh"} }), `[run] read_only added: "~/.ssh"`},
		{"run hides less", with(func(c *config.File) { c.Run.Hide = []string{"~/.gnupg"} }), `[run] hide removed: "~/.aws"`},
		{"run hides more", with(func(c *config.File) { c.Run.Hide = []string{"~/.aws", "~/.gnupg"} }), ""},
		{"session scope widened", with(func(c *config.File) { c.SessionScope = string(ScopeKey) }), "session_scope: destination → key"},
		{"bastion enabled", with(func(c *config.File) { c.Bastion.Enabled = true }), "[bastion] enabled"},
		{"bastion known_hosts changed", with(func(c *config.File) { c.Bastion.KnownHosts = []string{"/tmp/planted_hosts"} }), `[bastion] known_hosts: [] → ["/tmp/planted_hosts"]`},
		{"require_pq_kex on", with(func(c *config.File) { c.Bastion.RequirePQKex = true }), ""},
		{"upstream added", with(func(c *config.File) { c.Upstream = "/tmp/other.sock" }), `upstream: "" → "/tmp/other.sock"`},
		{"upstream changes forwarded", with(func(c *config.File) { c.UpstreamChanges = "forward" }), "upstream_changes: refuse → forward"},
		{"agent added", with(func(c *config.File) { c.Agents = append(slices.Clone(c.Agents), "bash") }), `agents added: "bash"`},
		{"agent removed", with(func(c *config.File) { c.Agents = c.Agents[1:] }), ""},
	} {
		got := strings.Join(Loosening(base, c.f), "; ")
		if c.loose == "" && got != "" || c.loose != "" && !strings.Contains(got, c.loose) {
			t.Errorf("%s: Loosening = %q, want %q", c.name, got, c.loose)
		}
	}
}

// Turning require_pq_kex off lets weaker hosts in: a loosening, and the
// setting stays on while it waits.
func TestRequirePQKexOffIsLoosening(t *testing.T) {
	a := config.Defaults()
	a.Bastion.RequirePQKex = true
	f := config.Defaults()
	if got := strings.Join(Loosening(a, f), "; "); !strings.Contains(got, "require_pq_kex") {
		t.Fatalf("Loosening = %q", got)
	}
	if !Strictest(a, f).Bastion.RequirePQKex {
		t.Fatal("require_pq_kex went off while the change waits")
	}
}

// Another upstream agent, or adds and removes forwarded to it, wait for
// a card; the approved upstream settings stay while they wait, and going
// back to refusing is taken at once.
func TestUpstreamChangesAreLoosening(t *testing.T) {
	a := config.Defaults()
	a.Upstream = "/run/user/1000/keys.sock"
	f := a
	f.Upstream, f.UpstreamChanges = "/tmp/elsewhere.sock", "forward"
	got := strings.Join(Loosening(a, f), "; ")
	if !strings.Contains(got, "upstream:") || !strings.Contains(got, "upstream_changes:") {
		t.Fatalf("Loosening = %q", got)
	}
	if s := Strictest(a, f); s.Upstream != a.Upstream || s.UpstreamChanges != "refuse" {
		t.Fatalf("while the change waits: upstream %q, upstream_changes %q", s.Upstream, s.UpstreamChanges)
	}
	a.UpstreamChanges, f = "forward", a
	f.UpstreamChanges = "refuse"
	if got := Loosening(a, f); len(got) != 0 {
		t.Fatalf("refusing again loosens: %q", got)
	}
	if s := Strictest(a, f); s.UpstreamChanges != "refuse" {
		t.Fatalf("refusing again waits: %q", s.UpstreamChanges)
	}
}

// While a looser file waits, each request gets the stricter of the two
// modes, and the run settings keep only what both allow.
func TestStrictest(t *testing.T) {
	a := config.Defaults()
	a.Rules = []config.Rule{{Host: "prod-*", Approval: "per-call"}}
	f := config.Defaults()
	f.Approval = "none"
	f.Run.ReadWrite = []string{"~/.cache", "~"}
	f.Run.Hide = nil
	a.Run.ReadWrite = []string{"~/.cache"}
	a.Run.Hide = []string{"~/.gnupg"}
	f.Agents = []string{"codex", "bash"}
	s := Strictest(a, f)
	if len(s.Run.ReadWrite) != 1 || s.Run.ReadWrite[0] != "~/.cache" || len(s.Run.Hide) != 1 {
		t.Fatalf("run settings: %+v", s.Run)
	}
	if !slices.Equal(s.Agents, []string{"codex"}) {
		t.Fatalf("agents preselected while a change adding one waits: %q", s.Agents)
	}
	p, err := CompileStrictest(a, f)
	if err != nil {
		t.Fatal(err)
	}
	fp, fa := facts{names: []string{"prod-db"}}, facts{names: []string{"dev"}}
	if m := p.inForce(&fp, false); m != "per-call" {
		t.Fatalf("prod under a pending change: %s", m)
	}
	if m := p.inForce(&fa, false); m != "session" {
		t.Fatalf("dev under a pending change: %s", m)
	}
}

// A card names the rule a change removes or adds by every field it has:
// the production rule of postern.toml(5)'s example is a class rule, and a
// card that left the class out would ask the person to approve ": per-call".
func TestLooseningNamesClassRules(t *testing.T) {
	a := config.Defaults()
	a.Rules = []config.Rule{{Class: "production", Approval: "per-call"}}
	f := config.Defaults()
	f.Rules = []config.Rule{{Class: "staging", Approval: "none"}}
	got := strings.Join(Loosening(a, f), "; ")
	for _, want := range []string{`rule removed: class = "production": per-call`, `rule added: class = "staging": none`} {
		if !strings.Contains(got, want) {
			t.Errorf("Loosening = %q, want %q", got, want)
		}
	}
}

// A bastion with no known_hosts of its own verifies the real hosts with
// the top-level known_hosts: a file added there is a host key it trusts,
// as one added to [bastion] known_hosts is, and waits for a card the same
// way; while it waits, the bastion trusts only the approved files.
func TestBastionTrustsTopLevelKnownHosts(t *testing.T) {
	a := config.Defaults()
	a.Bastion.Enabled = true
	a.KnownHosts = []string{"/home/u/.ssh/known_hosts"}
	f := a
	f.KnownHosts = []string{"/home/u/.ssh/known_hosts", "/tmp/planted_hosts"}
	got := strings.Join(Loosening(a, f), "; ")
	if !strings.Contains(got, "[bastion] known_hosts") || !strings.Contains(got, "/tmp/planted_hosts") {
		t.Fatalf("Loosening = %q, want the bastion's known_hosts named", got)
	}
	s := Strictest(a, f)
	known := s.Bastion.KnownHosts
	if len(known) == 0 {
		known = s.KnownHosts
	}
	if slices.Contains(known, "/tmp/planted_hosts") {
		t.Fatalf("while the change waits, the bastion verifies hosts with %q", known)
	}
	// Without a bastion, a known_hosts file added only names hosts on
	// cards: nothing to approve.
	a.Bastion.Enabled, f.Bastion.Enabled = false, false
	if got := Loosening(a, f); len(got) != 0 {
		t.Fatalf("without a bastion: Loosening = %q", got)
	}
}

// A host rule written as a name the inventory holds matches that host,
// brackets and all: ssh names a host on another port "[HOST]:PORT", and
// as a glob "[10.0.0.5]" is a set of characters, so the rule matched
// "1:2222" and not the host it names.
func TestHostRuleMatchesItsLiteralName(t *testing.T) {
	f := config.Defaults()
	f.Rules = []config.Rule{{Host: "[10.0.0.5]:2222", Approval: "per-call"}}
	p, err := Compile(f)
	if err != nil {
		t.Fatal(err)
	}
	db := facts{names: []string{"[10.0.0.5]:2222"}}
	if m := p.inForce(&db, false); m != "per-call" {
		t.Fatalf("a rule for host [10.0.0.5]:2222 gives that host %s", m)
	}
}

// card_cooldown is what keeps a run from flashing cards at the person or
// asking again each time it is told no: shortening it (to 0s, none at
// all) is a loosening, and the approved one stays while it waits.
func TestCardCooldownShorterIsLoosening(t *testing.T) {
	a := config.Defaults()
	f := config.Defaults()
	f.CardCooldown = config.Duration{}
	if got := strings.Join(Loosening(a, f), "; "); !strings.Contains(got, "card_cooldown: 30s → 0s") {
		t.Fatalf("Loosening = %q", got)
	}
	if s := Strictest(a, f); s.CardCooldown != a.CardCooldown {
		t.Fatalf("card_cooldown %s while the change waits", s.CardCooldown)
	}
	f.CardCooldown = config.Duration{Duration: time.Minute}
	if got := Loosening(a, f); len(got) != 0 {
		t.Fatalf("a longer card_cooldown loosens: %q", got)
	}
}

// A read_only path keeps a run from writing what a writable tree holds
// (postern.toml(5)): removing one lets runs write there, a loosening, and
// the approved one stays while the change waits.
func TestReadOnlyRemovedIsLoosening(t *testing.T) {
	a := config.Defaults()
	a.Run.ReadWrite = []string{"~/go"}
	a.Run.ReadOnly = []string{"~/go/src/vetted"}
	f := a
	f.Run.ReadOnly = nil
	if got := strings.Join(Loosening(a, f), "; "); !strings.Contains(got, `[run] read_only removed: "~/go/src/vetted"`) {
		t.Fatalf("Loosening = %q", got)
	}
	if s := Strictest(a, f); !slices.Equal(s.Run.ReadOnly, a.Run.ReadOnly) {
		t.Fatalf("read_only %q while the change waits", s.Run.ReadOnly)
	}
}

// [audit] syslog sends every event out of the log's encryption, and
// keeps its anchors beyond the reach of whoever writes the log: another
// address, a new one or none loosens, and the approved one stays while
// the change waits.
func TestAuditSyslogChangedIsLoosening(t *testing.T) {
	a := config.Defaults()
	a.Audit.Syslog = "/dev/log"
	for _, to := range []string{"udp:127.0.0.1:5514", ""} {
		f := a
		f.Audit.Syslog = to
		if got := strings.Join(Loosening(a, f), "; "); !strings.Contains(got, "[audit] syslog") {
			t.Errorf("syslog %q → %q: Loosening = %q", a.Audit.Syslog, to, got)
		}
		if s := Strictest(a, f); s.Audit.Syslog != a.Audit.Syslog {
			t.Errorf("syslog %q while the change to %q waits", s.Audit.Syslog, to)
		}
	}
	f := config.Defaults()
	f.Audit.Syslog = "tcp:logs.example:6514"
	if got := strings.Join(Loosening(config.Defaults(), f), "; "); !strings.Contains(got, "[audit] syslog") {
		t.Errorf("syslog set: Loosening = %q", got)
	}
	// The facility picks the daemon's rules that take the events.
	f = a
	f.Audit.SyslogFacility = "local7"
	if got := strings.Join(Loosening(a, f), "; "); !strings.Contains(got, "[audit] syslog_facility: authpriv → local7") {
		t.Errorf("syslog_facility authpriv → local7: Loosening = %q", got)
	}
	if s := Strictest(a, f); s.Audit.SyslogFacility != a.Audit.SyslogFacility {
		t.Errorf("syslog_facility %q while the change to local7 waits", s.Audit.SyslogFacility)
	}
}

// While a looser file waits, what it would loosen stays as approved: a
// known_hosts file with @revoked lines still refuses its keys, sessions
// stay scoped to a destination, and grants keep their lifetime.
func TestStrictestKeepsRevocationsScopeAndLifetime(t *testing.T) {
	dir := t.TempDir()
	plain, revoking := filepath.Join(dir, "plain"), filepath.Join(dir, "revoking")
	const line = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
	os.WriteFile(plain, []byte("host-a "+line+"\n"), 0o600)
	os.WriteFile(revoking, []byte("@revoked * "+line+"\n"), 0o600)
	key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	a := config.Defaults()
	a.KnownHosts = []string{plain, revoking}
	a.SessionScope = string(ScopeDestination)
	a.SessionLifetime = config.Duration{Duration: time.Hour}
	f := a
	f.KnownHosts = []string{plain}
	f.SessionScope = string(ScopeKey)
	f.SessionLifetime = config.Duration{}
	p, err := CompileStrictest(a, f)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Hosts.Lookup(key, nil).Revoked {
		t.Error("while the change waits, a key an approved known_hosts file revokes is not refused")
	}
	if p.Scope != ScopeDestination {
		t.Errorf("while the change waits, sessions are scoped to %s, want destination", p.Scope)
	}
	if p.Lifetime != time.Hour {
		t.Errorf("while the change waits, grants last %s, want 1h0m0s", p.Lifetime)
	}
}

// Each change quotes the paths it names, as it quotes patterns and
// addresses: the changes are one line each on a card, but joined with
// "; " in the audit log and the gateway's log, where a path holding "; "
// and words could read as a change of its own; and a path's trailing
// space would not show.
func TestLooseningQuotesPaths(t *testing.T) {
	a := config.Defaults()
	a.Run.ReadOnly = []string{"/srv/ro "}
	a.Run.Hide = []string{"~/.aws"}
	f := a
	f.Run.ReadWrite = []string{`/tmp/x; upstream: "" → "/tmp/evil.sock"`}
	f.Run.ReadOnly = []string{"/srv/new"}
	f.Run.Hide = nil
	got := strings.Join(Loosening(a, f), "; ")
	for _, want := range []string{
		`[run] read_write added: "/tmp/x; upstream: \"\" → \"/tmp/evil.sock\""`,
		`[run] read_only added: "/srv/new"`,
		`[run] read_only removed: "/srv/ro "`,
		`[run] hide removed: "~/.aws"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Loosening = %s\nwant %s in it", got, want)
		}
	}
}
