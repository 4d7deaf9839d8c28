package approvals

import (
	"context"
	"errors"
	"testing"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/procid/proctest/nofiles"
)

// A request covered by a session, made while the gateway has no
// descriptor free to check it and its run with, is refused as
// out_of_resources, without a card; the run and its grant go on, and
// cover the next request once descriptors are free.
func TestOutOfDescriptorsRefusesAndEndsNothing(t *testing.T) {
	w := newWorld(t)
	w.approve(13)
	r := w.req(13)
	restore := nofiles.Exhaust(t)
	d := w.e.Decide(context.Background(), r)
	restore()
	if d.Allow || d.Reason != audit.ReasonOutOfResources {
		t.Errorf("a request that could not be checked for want of descriptors: %+v, want refused as out_of_resources", d)
	}
	if cards, _ := w.e.Cards(); len(cards) != 0 {
		t.Errorf("a request that could not be checked put a card up: %+v", cards[0])
	}
	if runs, grants := w.e.Sessions(); len(runs) != 1 || len(grants) != 1 {
		t.Fatalf("the run and its grant did not outlive the want of descriptors: %v %v", runs, grants)
	}
	if d := w.e.Decide(context.Background(), w.req(13)); !d.Allow || d.Reason != audit.ReasonSession {
		t.Fatalf("once descriptors are free: %+v, want allowed by the session", d)
	}
}

// An answer the gateway had no descriptor to place the approver of is
// refused as that (a failure, status 1 at the command line), not as an
// approver inside the requester's tree or one that could not be placed
// (a denial, status 254); the card stays up, and the answer counts once
// descriptors are free.
func TestAnswerWithoutADescriptorSaysSo(t *testing.T) {
	w := newWorld(t)
	ch := w.decide(w.req(13))
	c := w.card()
	approver := w.f.Peer(30)
	restore := nofiles.Exhaust(t)
	err := w.e.Answer(c.ID, Answer{Verdict: VerdictSession, Subject: -1, Approver: "test"}, approver)
	restore()
	if !errors.Is(err, procid.ErrNoResources) || errors.Is(err, ErrApproverUndecided) {
		t.Fatalf("an answer placed without a free descriptor: %v, want an error wrapping procid.ErrNoResources alone", err)
	}
	w.answer(c.ID, VerdictSession, 30)
	if d := got(t, ch); !d.Allow {
		t.Fatalf("the answer given once descriptors were free: %+v", d)
	}
}

// A deny rule on a run's executable refuses the run's requests even while
// the gateway has no descriptor to check the run with, and so cannot
// match the rule against the run's program: whatever the policy says of
// the rest, such a request is refused (out_of_resources), never allowed
// under approval = "none", never put on a card a person could approve.
func TestExeDenyRuleHoldsOutOfDescriptors(t *testing.T) {
	for _, mode := range []audit.Mode{audit.ModeNone, audit.ModeSession, audit.ModePerCall} {
		w := newWorld(t)
		claude, _ := w.f.Table.Inspect(10)
		p := *w.e.Policy()
		p.Mode = mode
		p.Rules = []Rule{{Exe: claude.Exe.Path, Mode: audit.ModeDeny}}
		w.e.SetPolicy(&p)
		run := w.launch("agent", 10)
		if d := w.e.Decide(context.Background(), w.runReq(run, 13)); d.Allow || d.Reason != audit.ReasonPolicyDeny {
			t.Fatalf("approval %q, with descriptors: %+v, want the rule's denial", mode, d)
		}
		r := w.runReq(run, 13)
		restore := nofiles.Exhaust(t)
		d := w.e.Decide(context.Background(), r)
		restore()
		if d.Allow || d.Reason != audit.ReasonOutOfResources {
			t.Errorf("approval %q, out of descriptors: %+v, want refused as out_of_resources", mode, d)
		}
		if cards, _ := w.e.Cards(); len(cards) != 0 {
			t.Errorf("approval %q, out of descriptors: a card went up for a request a deny rule covers: %+v", mode, cards[0])
		}
	}
}
