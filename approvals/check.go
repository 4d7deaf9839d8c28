package approvals

import (
	"fmt"
	"strings"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/procid"
)

// Check is a dry run of the policy ("postern check"): the request it
// describes is not made, and nothing is recorded.
type Check struct {
	// Names are the destination's names, as the verified host key would
	// carry them; none means a request without a destination (an SSHSIG
	// signature).
	Names []string
	// Classes are the inventory's classes for those names.
	Classes []string
	// Unknown is a destination the inventory has no name for: it could
	// be any host, and gets the strictest mode any host rule could give.
	Unknown bool
	Key     Key
	// Exes are the requesting chain's executables, requester first and,
	// for a request through a run's own socket, the run last. Exe rules
	// match the first and the last, as they match a request's requester
	// and run: never another process of the chain.
	Exes      []procid.Exe
	Forwarded bool
}

// CheckResult is the mode the policy gives a request and why.
type CheckResult struct {
	Mode    audit.Mode `json:"mode"`
	Because string     `json:"because"`
	Rules   []int      `json:"matching_rules"` // 1-based; [] for none
}

// Check dry-runs the policy for c, as Decide would choose the mode
// (inForce): while a configuration that loosens the approved one waits
// for its card, the approved policy counts too, and the stricter mode
// wins. Rules are numbered as the file in force numbers them; when the
// approved configuration decides, Because says so and names its rules.
func (p *Policy) Check(c Check) CheckResult {
	res := p.checkAs(c, c.Exes)
	// The gateway matches no exe rule for the requests of a confined
	// run, whose processes all run in the run's user namespace
	// (programOf): an answer an exe rule gave does not hold there, and
	// the dry run says what does.
	if len(c.Exes) > 0 {
		if in := p.checkAs(c, nil); in.Mode != res.Mode {
			res.Because += fmt.Sprintf("; but %s from inside a confined run (postern run), where no exe rule matches: its processes are in a user namespace of their own, where a process can make any file its executable", in.Mode)
		}
	}
	return res
}

// checkAs is Check for a requesting chain of the executables exes.
func (p *Policy) checkAs(c Check, exes []procid.Exe) CheckResult {
	var progs []program
	for i, x := range exes {
		if i == 0 || i == len(exes)-1 {
			progs = append(progs, program{path: x.Path, hash: x.Hash()})
		}
	}
	f := &facts{names: c.Names, classes: c.Classes, anyHost: c.Unknown, key: c.Key, programs: func() []program { return progs }}
	res := p.explain(f, c.Forwarded)
	if c.Key.Confirm {
		res.Mode = Stricter(res.Mode, audit.ModePerCall)
		res.Because += "; the key was added with ssh-add -c"
	}
	return res
}

// explain returns the mode the policy in force gives f, as Decide
// chooses it (inForce), and why: the rules of p, or of the approved
// policy under it when that one decides. Check says it, and so does a
// per-call card.
func (p *Policy) explain(f *facts, forwarded bool) CheckResult {
	res := p.check(f, forwarded)
	res.Mode = p.inForce(f, forwarded)
	for q := p.under; q != nil; q = q.under {
		if r := q.check(f, forwarded); r.Mode == res.Mode && strictness(r.Mode) > strictness(p.modeFor(f, forwarded)) {
			res.Because = "the approved configuration, while a change to the file that loosens it waits for a card: " + r.Because
			break
		}
	}
	return res
}

// check explains the mode p alone gives a request.
func (p *Policy) check(f *facts, forwarded bool) CheckResult {
	res := CheckResult{Rules: []int{}}
	var why []string
	strictest := audit.ModeNone
	for i := range p.Rules {
		if p.Rules[i].matches(f) {
			res.Rules = append(res.Rules, i+1)
			strictest = Stricter(strictest, p.Rules[i].Mode)
		}
	}
	for _, n := range res.Rules {
		if r := p.Rules[n-1]; r.Mode == strictest {
			why = append(why, fmt.Sprintf("rule %d: %s", n, r.describe()))
		}
	}
	base := p.modeFor(f, false)
	res.Mode = p.modeFor(f, forwarded)
	could := false // a host rule that could be the destination's
	if f.anyHost {
		unknown := "the destination has no name in the host inventory: it could be any host"
		for i := range p.Rules {
			if r := &p.Rules[i]; r.hostRule() && r.matchesRequest(f) {
				could = true
				if r.Mode == base {
					unknown += fmt.Sprintf(", and rule %d could be its: %s", i+1, r.describe())
				}
			}
		}
		if p.Unknown != "" && p.Unknown == base {
			unknown += fmt.Sprintf(" (unknown_destination = %q)", p.Unknown)
		}
		why = append(why, unknown)
	}
	if len(res.Rules) == 0 && !could {
		why = append(why, fmt.Sprintf("no rule matches: the default (approval = %q)", p.Mode))
	}
	if res.Mode != base {
		why = append(why, "a forwarded connection never rides a session")
	}
	res.Because = strings.Join(why, "; ")
	return res
}

// describe renders a rule as the configuration spells it.
func (r *Rule) describe() string {
	var parts []string
	if r.Host != "" {
		parts = append(parts, fmt.Sprintf("host %q", r.Host))
	}
	if r.Class != "" {
		parts = append(parts, fmt.Sprintf("class %q", r.Class))
	}
	if r.Key != "" {
		parts = append(parts, fmt.Sprintf("key %q", r.Key))
	}
	if r.Exe != "" {
		parts = append(parts, fmt.Sprintf("exe %q", r.Exe))
	}
	return strings.Join(parts, ", ") + fmt.Sprintf(" (approval = %q)", r.Mode)
}
