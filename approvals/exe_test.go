package approvals

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/postern/postern/audit"
)

// An exe rule matches the verified executable of the requester or of the
// run, never a name anywhere in the ancestry.
func TestExeRulesMatchOnlyVerifiedExecutables(t *testing.T) {
	w := newWorld(t)
	git, _ := w.f.Table.Inspect(12)
	p := *w.e.Policy()
	p.Rules = []Rule{{Exe: git.Exe.Path, Mode: audit.ModeNone}}
	w.e.SetPolicy(&p)
	decideNow := func(r *Request) Decision {
		t.Helper()
		return w.decideOrDeny(r)
	}

	// ssh under the real git: git is an ancestor, not the requester.
	if d := decideNow(w.req(13)); d.Reason == audit.ReasonPolicyNone {
		t.Fatal("a rule for git applied to ssh because git is its parent")
	}
	// git itself asks: the rule applies.
	if d := decideNow(w.req(12)); d.Reason != audit.ReasonPolicyNone {
		t.Fatalf("git itself: %+v", d)
	}
	// A shell copied to a file named git: another path, bash's hash.
	shell, _ := os.ReadFile(filepath.Join(w.f.Root, "bin", "bash"))
	fake := filepath.Join(t.TempDir(), "git")
	os.WriteFile(fake, shell, 0o755)
	w.f.Set(60, 11, 600, fake, "git")
	if d := decideNow(w.req(60)); d.Reason == audit.ReasonPolicyNone {
		t.Fatal("a shell named git borrowed git's rule")
	}
	p.Rules = []Rule{{Exe: "sha256:" + git.Exe.Hash(), Mode: audit.ModeNone}}
	w.e.SetPolicy(&p)
	if d := decideNow(w.req(60)); d.Reason == audit.ReasonPolicyNone {
		t.Fatal("a shell named git matched git's hash")
	}
	if d := decideNow(w.req(12)); d.Reason != audit.ReasonPolicyNone {
		t.Fatalf("git by its hash: %+v", d)
	}
	// git in a user namespace of its own could have pointed its
	// executable anywhere: not verified.
	w.f.SetUserNS(12)
	if d := decideNow(w.req(12)); d.Reason == audit.ReasonPolicyNone {
		t.Fatal("a process in another user namespace matched an exe rule")
	}
}

// Through a run's socket, the run's executable counts too: a rule for the
// launched agent covers the ssh it starts.
func TestExeRuleMatchesTheRun(t *testing.T) {
	w := newWorld(t)
	claude, _ := w.f.Table.Inspect(10)
	p := *w.e.Policy()
	p.Rules = []Rule{{Exe: claude.Exe.Path, Mode: audit.ModePerCall}}
	w.e.SetPolicy(&p)
	run := w.launch("agent", 10)
	ch := w.decide(w.runReq(run, 13))
	if c := w.card(); c.Mode != audit.ModePerCall {
		t.Fatalf("a request of the run: %+v", c)
	}
	w.answer(w.card().ID, VerdictDeny, 30)
	got(t, ch)
	// The same ssh on the main socket: the run is not known there.
	ch = w.decide(w.req(13))
	if c := w.card(); c.Mode != audit.ModeSession {
		t.Fatalf("on the main socket: %+v", c)
	}
	w.answer(w.card().ID, VerdictDeny, 30)
	got(t, ch)
}

// decideOrDeny decides r; a card it shows is denied.
func (w *world) decideOrDeny(r *Request) Decision {
	w.t.Helper()
	ch := w.decide(r)
	for {
		select {
		case d := <-ch:
			return d
		case <-time.After(2 * time.Millisecond):
		}
		if cards, _ := w.e.Cards(); len(cards) > 0 {
			w.answer(cards[0].ID, VerdictDeny, 30)
		}
	}
}

// An executable whose path names no file the gateway could verify (its
// file replaced or removed since it was executed), or whose hash could
// not be taken, matches no exe rule by what it lacks: not "*", which
// matches an empty path, nor a "sha256:" rule with no hash.
func TestExeRuleMatchesNothingUnverified(t *testing.T) {
	for _, c := range []struct {
		pattern string
		prog    program
	}{
		{"*", program{hash: "ab12"}},
		{"sha256:", program{path: "/usr/bin/git"}},
	} {
		if exeMatches(c.pattern, []program{c.prog}) {
			t.Errorf("exe rule %q matched %+v", c.pattern, c.prog)
		}
	}
}
