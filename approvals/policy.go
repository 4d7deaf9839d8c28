package approvals

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/config"
	"github.com/postern/postern/internal/inventory"
	"github.com/postern/postern/internal/knownhosts"
	"github.com/postern/postern/internal/procid"
)

// Scope is what a session approval covers.
type Scope string

const (
	// ScopeKey: the key, for every use the policy does not ask about on
	// each call (including SSHSIG signatures such as git commits).
	ScopeKey Scope = "key"
	// ScopeDestination: the key for the one verified destination
	// approved.
	ScopeDestination Scope = "destination"
)

// A Rule sets the mode of the requests it matches; see postern.toml(5).
type Rule struct {
	Host  string // glob over the host inventory's names of the verified host key
	Class string // glob over the host inventory's classes of the verified host key
	Key   string // "SHA256:…" fingerprint, or a glob over the key comment
	Exe   string // "sha256:HEX", or a glob over absolute executable paths
	Mode  audit.Mode
}

// Policy is the approval policy in force.
type Policy struct {
	Mode        audit.Mode
	CardTimeout time.Duration
	Cooldown    time.Duration
	Hosts       *knownhosts.DB
	Agents      []string
	Scope       Scope
	Lifetime    time.Duration // 0: grants end only with their run
	Rules       []Rule
	// Unknown is the least a request whose destination has no name gets
	// (not verified, or not in the host inventory): it gets the strictest
	// mode any host rule could give it, and never less than this. Empty:
	// no floor of its own.
	Unknown audit.Mode

	// under is the approved policy while a looser configuration waits
	// for a person: a request gets the stricter of the two modes.
	under *Policy
}

// Compile builds a Policy from a checked configuration file.
func Compile(f config.File) (*Policy, error) {
	mode, err := audit.ParseMode(f.Approval)
	if err != nil {
		return nil, err
	}
	p := &Policy{
		Mode:        mode,
		CardTimeout: f.CardTimeout.Duration,
		Cooldown:    f.CardCooldown.Duration,
		Hosts:       knownhosts.Open(f.KnownHosts),
		Agents:      f.Agents,
		Scope:       Scope(f.SessionScope),
		Lifetime:    f.SessionLifetime.Duration,
	}
	if f.UnknownDestination != "" {
		if p.Unknown, err = audit.ParseMode(f.UnknownDestination); err != nil {
			return nil, fmt.Errorf("unknown_destination: %w", err)
		}
	}
	for i, r := range f.Rules {
		m, err := audit.ParseMode(r.Approval)
		if err != nil {
			return nil, fmt.Errorf("rule %d: %w", i+1, err)
		}
		p.Rules = append(p.Rules, Rule{Host: r.Host, Class: r.Class, Key: r.Key, Exe: r.Exe, Mode: m})
	}
	return p, nil
}

// strictness orders the modes: a stricter mode is never replaced by a
// laxer one.
func strictness(m audit.Mode) int {
	switch m {
	case audit.ModeNone:
		return 0
	case audit.ModeSession:
		return 1
	case audit.ModePerCall:
		return 2
	}
	return 3 // deny, and anything unknown
}

// Stricter returns the stricter of two modes.
func Stricter(a, b audit.Mode) audit.Mode {
	if strictness(b) > strictness(a) {
		return b
	}
	return a
}

// facts are what rules are matched against.
type facts struct {
	names    []string         // the host inventory's names for the verified destination
	classes  []string         // and its classes
	anyHost  bool             // the destination has no name: it could be any host
	key      Key              // the key
	programs func() []program // the verified executables of the requester and the run
}

// program is a verified executable: the file a process executes, named
// by a path that names that very file for the gateway (or "" when it does
// not), and its SHA-256. Only processes in the gateway's own user
// namespace have one: elsewhere a process can point its executable at any
// file.
type program struct {
	path, hash string
}

// programOf returns p's verified executable, if it has one.
func programOf(p *procid.Peer) (program, bool) {
	if !p.InOwnUserNS() {
		return program{}, false
	}
	prog := program{hash: p.Exe.Hash()}
	if procid.SamePath(p.Exe.Path, p.Exe) {
		prog.path = p.Exe.Path
	}
	return prog, true
}

// hostRule reports whether r is about destinations.
func (r *Rule) hostRule() bool { return r.Host != "" || r.Class != "" }

func (r *Rule) matches(f *facts) bool {
	if r.Host != "" && !anyMatch(r.Host, f.names) {
		return false
	}
	if r.Class != "" && !anyMatch(r.Class, f.classes) {
		return false
	}
	return r.matchesRequest(f)
}

// matchesRequest matches the fields of r that are not about the
// destination.
func (r *Rule) matchesRequest(f *facts) bool {
	if r.Key != "" {
		if strings.HasPrefix(r.Key, "SHA256:") {
			if r.Key != f.key.Fingerprint {
				return false
			}
		} else if !f.key.commentMatches(r.Key) {
			return false
		}
	}
	if r.Exe != "" && !exeMatches(r.Exe, f.programs()) {
		return false
	}
	return true
}

// anyMatch reports whether glob matches one of names, or is one of them:
// a name such as "[10.0.0.5]:2222" (a host on another port, as ssh names
// it) is a pattern of characters in brackets as a glob, and a rule that
// spells the name means that name. A name is matched as ssh_config's
// Host patterns match a host: case does not count, as it does not for
// DNS; the port does not count, so that "[10.0.0.5]:2222" is 10.0.0.5
// too; and a name ends with the root's dot or without it, as DNS reads
// it ("db.example.com." is db.example.com). An IP address is matched
// as written and as netip writes the address it is: an IPv4 address
// mapped into IPv6 ("::ffff:10.0.0.5", as ssh names a host reached so)
// as the IPv4 address too, an IPv6 address in its short form ("::1").
func anyMatch(glob string, names []string) bool {
	glob = inventory.NameForm(glob)
	for _, n := range names {
		for _, form := range nameForms(n) {
			if ok, _ := path.Match(glob, form); ok || form == glob {
				return true
			}
		}
	}
	return false
}

// nameForms returns the forms a host name is matched in: itself and, for
// a host on another port ("[host]:port"), the host; each also as the IP
// address it is, when it is one written otherwise.
func nameForms(name string) []string {
	var forms []string
	add := func(n string) {
		n = inventory.HostForm(n)
		forms = append(forms, n)
		if a := inventory.AddrForm(n); a != n {
			forms = append(forms, a)
		}
	}
	add(name)
	if in, port, ok := strings.Cut(strings.TrimPrefix(name, "["), "]:"); ok && strings.HasPrefix(name, "[") && port != "" && strings.Trim(port, "0123456789") == "" {
		add(in)
	}
	return forms
}

// SameHostName reports whether two host names are one name as rules
// match them: case aside, with or without the root's trailing dot, an
// IP address as the address it is.
func SameHostName(a, b string) bool { return inventory.NameForm(a) == inventory.NameForm(b) }

// commentMatches reports whether glob matches the key's comment, or the
// comment of another copy of the key.
func (k *Key) commentMatches(glob string) bool {
	if commentMatches(glob, k.Comment) {
		return true
	}
	return k.Comments != nil && slices.ContainsFunc(k.Comments(), func(c string) bool { return commentMatches(glob, c) })
}

// commentMatches matches a glob over key comments against a key's
// comment. Case does not count, as for a host's name: a person who
// writes "prod-*" means the key "Prod-Deploy" too, and a per-call rule
// that missed it would let the key ride a session. A comment is no
// path, but is often a path's text: ssh-add gives a key without a
// comment of its own its file's path, and a token's keys the
// provider's. So "*" and "?" match a "/" too, which path.Match's do
// not: the glob is matched with "/" renamed, in both, to a character
// neither holds.
func commentMatches(glob, comment string) bool {
	glob, comment = strings.ToLower(glob), strings.ToLower(comment)
	if strings.Contains(comment, "/") {
		held := map[rune]bool{}
		for _, r := range glob + comment {
			held[r] = true
		}
		sep := '\uE000'
		for held[sep] {
			sep++
		}
		glob = strings.ReplaceAll(glob, "/", string(sep))
		comment = strings.ReplaceAll(comment, "/", string(sep))
	}
	ok, _ := path.Match(glob, comment)
	return ok
}

// exeMatches matches an exe rule against the verified executables of the
// requester and the run: never a name, and never another process of the
// ancestry (a shell copied to "git", or git's core.sshCommand, must not
// borrow a rule meant for git).
func exeMatches(pattern string, programs []program) bool {
	hash, byHash := strings.CutPrefix(pattern, "sha256:")
	for _, p := range programs {
		if byHash {
			if p.hash != "" && strings.EqualFold(p.hash, hash) {
				return true
			}
			continue
		}
		if p.path != "" {
			if ok, _ := path.Match(pattern, p.path); ok {
				return true
			}
		}
	}
	return false
}

// modeFor returns the mode the policy asks for: the strictest mode of the
// matching rules, else the default. A destination with no name could be
// any host: it gets the strictest mode any host rule could give it (each
// host or class rule whose other fields match counts), and no less than
// Unknown. A forwarded connection never rides a session: session becomes
// per-call.
func (p *Policy) modeFor(f *facts, forwarding bool) audit.Mode {
	mode, matched := audit.ModeNone, false
	hosts, anyHostRule := audit.ModeNone, false
	for i := range p.Rules {
		r := &p.Rules[i]
		if f.anyHost && r.hostRule() {
			if r.matchesRequest(f) {
				hosts, anyHostRule = Stricter(hosts, r.Mode), true
			}
			continue
		}
		if r.matches(f) {
			mode, matched = Stricter(mode, r.Mode), true
		}
	}
	if !matched {
		mode = p.Mode
	}
	if f.anyHost {
		if anyHostRule {
			mode = Stricter(mode, hosts)
		}
		if p.Unknown != "" {
			mode = Stricter(mode, p.Unknown)
		}
	}
	if forwarding && mode == audit.ModeSession {
		mode = audit.ModePerCall
	}
	return mode
}

// isAgent reports whether a process is one of the configured agents, by
// executable name, kernel name or the names on its command line (the
// first two arguments; argv is called only when the other names do not
// match). This only preselects a subject on a card; it grants nothing.
func (p *Policy) isAgent(proc *procid.Process, argv func() []string) bool {
	if len(p.Agents) == 0 {
		return false
	}
	if p.agentNamed(filepath.Base(proc.Exe.Path)) || p.agentNamed(proc.Comm) {
		return true
	}
	for i, a := range argv() {
		if i > 1 {
			break
		}
		if p.agentNamed(filepath.Base(a)) {
			return true
		}
	}
	return false
}

// agentNamed reports whether name is one of the configured agents.
func (p *Policy) agentNamed(name string) bool {
	return name != "" && slices.Contains(p.Agents, name)
}
