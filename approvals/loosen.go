package approvals

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/config"
	"github.com/postern/postern/internal/knownhosts"
)

// Loosening lists, in words for a card, how configuration f loosens
// authority compared with a: a weaker default mode, a rule removed or
// added that can lower a request's mode, a known_hosts file with @revoked
// lines dropped, a weaker unknown_destination, a wider session scope or a
// longer session lifetime, a shorter card cooldown, more a confined run may write or see
// (a read_only path added or removed), a bastion enabled or trusting other
// host keys (its own known_hosts, or the top-level ones it falls back to), another upstream agent or adds and removes forwarded to it,
// the audit log's events sent to another syslog address or to none, or
// with another facility, or another program a card preselects (agents:
// one key press approves what the card preselects). It is empty when f
// only tightens or changes nothing of authority (card_timeout, an agent
// removed). The comparison is conservative: a change that might loosen
// counts.
func Loosening(a, f config.File) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	am, _ := audit.ParseMode(a.Approval)
	fm, _ := audit.ParseMode(f.Approval)
	if strictness(fm) < strictness(am) {
		add("approval: %s → %s", am, fm)
	}
	// A rule added with a mode laxer than the old default can lower a
	// request that matched nothing; a rule removed can lower what it
	// matched, unless nothing in f is laxer than it.
	floor := strictness(fm)
	for _, r := range f.Rules {
		m, _ := audit.ParseMode(r.Approval)
		floor = min(floor, strictness(m))
	}
	removed, added := ruleDiff(a.Rules, f.Rules)
	for _, r := range removed {
		if m, _ := audit.ParseMode(r.Approval); strictness(m) > floor {
			add("rule removed: %s", ruleText(r))
		}
	}
	for _, r := range added {
		if m, _ := audit.ParseMode(r.Approval); strictness(m) < strictness(am) {
			add("rule added: %s", ruleText(r))
		}
	}
	// known_hosts gives no names (the host inventory does), but its
	// @revoked lines refuse keys: dropping a file that has some loosens.
	for _, p := range setMinus(a.KnownHosts, f.KnownHosts) {
		if knownhosts.Open([]string{p}).Revokes() {
			add("known_hosts removed, with its @revoked lines: %q", p)
		}
	}
	// A card preselects the first ancestor of the requester an agent
	// names, and one key press approves a session for it: a name added
	// there (the person's shell, tmux, the service manager) has that key
	// press approve every program under it.
	for _, n := range setMinus(f.Agents, a.Agents) {
		add("agents added: %q (a card preselects it for a session)", n)
	}
	if a.UnknownDestination != "" && a.UnknownDestination != f.UnknownDestination {
		am, _ := audit.ParseMode(a.UnknownDestination)
		if fm, _ := audit.ParseMode(f.UnknownDestination); f.UnknownDestination == "" || strictness(fm) < strictness(am) {
			add("unknown_destination: %q → %q", a.UnknownDestination, f.UnknownDestination)
		}
	}
	if a.SessionScope == string(ScopeDestination) && f.SessionScope != a.SessionScope {
		add("session_scope: %s → %s", a.SessionScope, f.SessionScope)
	}
	if al, fl := a.SessionLifetime.Duration, f.SessionLifetime.Duration; al > 0 && (fl == 0 || fl > al) {
		add("session_lifetime: %s → %s", lifetimeText(al), lifetimeText(fl))
	}
	// The cooldown keeps a run from flashing cards at the person, and
	// from asking again each time it is told no.
	if ac, fc := a.CardCooldown.Duration, f.CardCooldown.Duration; fc < ac {
		add("card_cooldown: %s → %s", ac, fc)
	}
	for _, p := range setMinus(f.Run.ReadWrite, a.Run.ReadWrite) {
		add("[run] read_write added: %q", p)
	}
	// A read_only path shows what a hidden tree holds, and keeps a run
	// from writing what a writable tree holds: adding one or removing one
	// can loosen.
	for _, p := range setMinus(f.Run.ReadOnly, a.Run.ReadOnly) {
		add("[run] read_only added: %q", p)
	}
	for _, p := range setMinus(a.Run.ReadOnly, f.Run.ReadOnly) {
		add("[run] read_only removed: %q", p)
	}
	for _, p := range setMinus(a.Run.Hide, f.Run.Hide) {
		add("[run] hide removed: %q", p)
	}
	if f.Bastion.Enabled && !a.Bastion.Enabled {
		add("[bastion] enabled")
	}
	if !slices.Equal(a.Bastion.KnownHosts, f.Bastion.KnownHosts) {
		add("[bastion] known_hosts: %q → %q", a.Bastion.KnownHosts, f.Bastion.KnownHosts)
	} else if ak, fk := bastionKnownHosts(a), bastionKnownHosts(f); f.Bastion.Enabled && len(setMinus(fk, ak)) > 0 {
		// Without files of its own, the bastion verifies the real hosts
		// with the top-level ones: a file added there is trusted too.
		add("[bastion] known_hosts (the top-level ones, it has none of its own): %q → %q", ak, fk)
	}
	if a.Bastion.RequirePQKex && !f.Bastion.RequirePQKex {
		add("[bastion] require_pq_kex: true → false (hosts without a post-quantum key exchange are let in)")
	}
	// Another upstream agent is another source of identities and of
	// signatures; forwarding adds and removes lets a requester change it.
	if a.Upstream != f.Upstream {
		add("upstream: %q → %q", a.Upstream, f.Upstream)
	}
	if a.UpstreamChanges != f.UpstreamChanges && f.UpstreamChanges != "refuse" {
		add("upstream_changes: %s → %s", a.UpstreamChanges, f.UpstreamChanges)
	}
	// The export sends every event out of the log's encryption, and
	// keeps the log's anchors beyond the reach of whoever can write it:
	// another address, or none, loosens.
	if a.Audit.Syslog != f.Audit.Syslog {
		add("[audit] syslog: %q → %q", a.Audit.Syslog, f.Audit.Syslog)
	}
	// The facility picks the daemon's rules that take the events (those
	// that ship authpriv off the machine, say): another one is another
	// destination as much as another address.
	if f.Audit.Syslog != "" && a.Audit.SyslogFacility != f.Audit.SyslogFacility {
		add("[audit] syslog_facility: %s → %s", a.Audit.SyslogFacility, f.Audit.SyslogFacility)
	}
	return out
}

// Strictest returns the configuration a gateway keeps in force while f
// waits for approval against a: f's where it tightens, a's where it would
// loosen. Its policy is compiled with [CompileStrictest].
func Strictest(a, f config.File) config.File {
	s := f
	s.KnownHosts = append(slices.Clone(f.KnownHosts), setMinus(a.KnownHosts, f.KnownHosts)...)
	s.Run.ReadWrite = setMinus(f.Run.ReadWrite, setMinus(f.Run.ReadWrite, a.Run.ReadWrite))
	s.Run.ReadOnly = slices.Clone(a.Run.ReadOnly)
	s.Agents = setMinus(f.Agents, setMinus(f.Agents, a.Agents))
	s.Run.Hide = append(slices.Clone(f.Run.Hide), setMinus(a.Run.Hide, f.Run.Hide)...)
	if a.SessionScope == string(ScopeDestination) {
		s.SessionScope = a.SessionScope
	}
	if al, fl := a.SessionLifetime.Duration, f.SessionLifetime.Duration; al > 0 && (fl == 0 || fl > al) {
		s.SessionLifetime = a.SessionLifetime
	}
	s.CardCooldown.Duration = max(a.CardCooldown.Duration, f.CardCooldown.Duration)
	s.Bastion.Enabled = a.Bastion.Enabled && f.Bastion.Enabled
	// The bastion verifies real hosts with the approved files only (the
	// top-level ones, when it has none of its own).
	s.Bastion.KnownHosts = bastionKnownHosts(a)
	s.Bastion.RequirePQKex = a.Bastion.RequirePQKex || f.Bastion.RequirePQKex
	s.Upstream = a.Upstream
	if f.UpstreamChanges != "refuse" {
		s.UpstreamChanges = a.UpstreamChanges
	}
	s.Audit = a.Audit
	return s
}

// CompileStrictest compiles the policy in force while f waits for
// approval against a: every request gets the stricter of the modes the
// two policies give it (each with its own known_hosts files).
func CompileStrictest(a, f config.File) (*Policy, error) {
	pa, err := Compile(a)
	if err != nil {
		return nil, err
	}
	p, err := Compile(Strictest(a, f))
	if err != nil {
		return nil, err
	}
	p.under = pa
	return p, nil
}

// inForce returns the mode p gives a request: while a looser
// configuration waits for a person, the approved policy under p counts
// too, and the stricter mode wins.
func (p *Policy) inForce(f *facts, forwarding bool) audit.Mode {
	mode := p.modeFor(f, forwarding)
	for q := p.under; q != nil; q = q.under {
		mode = Stricter(mode, q.modeFor(f, forwarding))
	}
	return mode
}

func ruleText(r config.Rule) string {
	var parts []string
	for _, kv := range [][2]string{{"host", r.Host}, {"class", r.Class}, {"key", r.Key}, {"exe", r.Exe}} {
		if kv[1] != "" {
			parts = append(parts, fmt.Sprintf("%s = %q", kv[0], kv[1]))
		}
	}
	return strings.Join(parts, ", ") + ": " + r.Approval
}

// bastionKnownHosts returns the known_hosts files the bastion of f
// verifies real hosts with: its own, or without any, the top-level ones.
func bastionKnownHosts(f config.File) []string {
	if len(f.Bastion.KnownHosts) > 0 {
		return f.Bastion.KnownHosts
	}
	return slices.Clone(f.KnownHosts)
}

// ruleDiff returns the rules of a not in f and those of f not in a, as
// multisets.
func ruleDiff(a, f []config.Rule) (removed, added []config.Rule) {
	left := slices.Clone(f)
	for _, r := range a {
		if i := slices.Index(left, r); i >= 0 {
			left = slices.Delete(left, i, i+1)
		} else {
			removed = append(removed, r)
		}
	}
	return removed, left
}

// setMinus returns the elements of a not in b.
func setMinus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func lifetimeText(d time.Duration) string {
	if d == 0 {
		return "unlimited"
	}
	return d.String()
}
