package approvals

import (
	"context"
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/audit"
)

// A process asks why: it learns the decision for the request nearest to
// it in the process tree, waiting while its card is pending, then how
// the card was answered.
func TestWhyForTheCallersTree(t *testing.T) {
	w := newWorld(t)
	// 14 is a shell the agent (10) started after git's ssh (13) failed;
	// it asks "postern why".
	sh := w.f.Exe("bash", "a shell")
	w.f.Set(14, 10, 140, sh, "bash")
	if _, ok := w.e.WhyFor(w.f.Peer(14), ""); ok {
		t.Fatal("a decision before any request")
	}
	ch := w.decide(w.req(13))
	c := w.card()
	why, ok := w.e.WhyFor(w.f.Peer(14), "")
	if !ok || why.Outcome != "WAITING "+c.ID || why.Card != c.ID {
		t.Fatalf("while the card waits: %+v", why)
	}
	if !strings.Contains(why.Requester, "ssh (13)") {
		t.Errorf("requester %q", why.Requester)
	}
	w.answer(c.ID, VerdictDeny, 30)
	got(t, ch)
	why, _ = w.e.WhyFor(w.f.Peer(14), "")
	if why.Outcome != "DENIED denied" || why.Allowed || !strings.Contains(why.Next, "Do not retry") {
		t.Fatalf("after the denial: %+v", why)
	}
	// The other agent (20) has no decision of its own: the init process
	// they share does not make 13's decision its.
	if why, ok := w.e.WhyFor(w.f.Peer(20), ""); ok {
		t.Fatalf("another tree saw %+v", why)
	}
}

// Through a run's socket, the caller learns about that run only.
func TestWhyForARun(t *testing.T) {
	w := newWorld(t)
	r := &Request{Requester: w.f.Peer(13), Channel: Channel{Kind: ChannelRun, Run: "R1"}, Key: w.key}
	w.e.noteWhy(r, Decision{Reason: audit.ReasonVaultLocked}, false, nil)
	w.e.noteWhy(w.req(21), Decision{Reason: audit.ReasonPolicyDeny}, false, nil)
	why, ok := w.e.WhyFor(w.f.Peer(21), "R1")
	if !ok || why.Outcome != "DENIED vault_locked" || why.Run != "R1" {
		t.Fatalf("run R1: %+v", why)
	}
	if _, ok := w.e.WhyFor(w.f.Peer(21), "R2"); ok {
		t.Fatal("run R2 saw another run's decision")
	}
}

// A signature's decision names its namespace, as its card did: a program
// refused a commit signature, or one that signed for "file" where "git"
// was meant, is told which namespace the gateway decided on. A login's
// decision names none.
func TestWhyNamesTheNamespace(t *testing.T) {
	w := newWorld(t)
	r := w.req(13)
	r.Purpose, r.Namespace = PurposeSSHSig, "git"
	w.e.noteWhy(r, Decision{Reason: audit.ReasonPolicyDeny}, false, nil)
	if why, _ := w.e.WhyFor(w.f.Peer(13), ""); why.Namespace != "git" {
		t.Fatalf("a signature's decision: %+v", why)
	}
	w.e.noteWhy(w.req(13), Decision{Reason: audit.ReasonPolicyDeny}, false, nil)
	if why, _ := w.e.WhyFor(w.f.Peer(13), ""); why.Namespace != "" {
		t.Fatalf("a login's decision names namespace %q", why.Namespace)
	}
}

// The outcomes in the seed's words.
func TestWhyOutcomeWords(t *testing.T) {
	for _, c := range []struct {
		d       Decision
		journal string
		want    string
	}{
		{Decision{Reason: audit.ReasonTimeout, CardReason: audit.ReasonReauthProcessChanged}, "", "REAUTH_REQUIRED process_changed"},
		{Decision{Reason: audit.ReasonDenied, CardReason: audit.ReasonRetryUnknown}, "J1", "STATUS_UNKNOWN inspect_activity_journal"},
		{Decision{Reason: audit.ReasonNoApprover}, "", "DENIED no_approver"},
		{Decision{Allow: true, Reason: audit.ReasonSession}, "", "ALLOWED"},
	} {
		if got, _, _ := explain(c.d, false, c.journal); got != c.want {
			t.Errorf("%+v: %q, want %q", c.d, got, c.want)
		}
	}
}

// A withdrawn card is explained by why it was withdrawn: the requester
// went away, or it ran another program.
func TestWhyWithdrawn(t *testing.T) {
	for reason, want := range map[audit.Reason]string{
		audit.ReasonCanceled:         "hung up or exited",
		audit.ReasonIdentityMismatch: "ran another program",
	} {
		outcome, what, _ := explain(Decision{Reason: reason, Card: "C1"}, false, "")
		if outcome != "DENIED "+string(reason) || !strings.Contains(what, want) {
			t.Errorf("%s: %q %q", reason, outcome, what)
		}
	}
}

// postern why names the requesting chain as a card does: a process
// whose name holds a space or a parenthesis is quoted, so that "git bash"
// never reads as two processes, nor "claude (3988)" as a name and a pid.
func TestWhyRequesterNamesAreQuoted(t *testing.T) {
	w := newWorld(t)
	w.f.Set(12, 11, 120, w.f.Exe("git bash", "a git posing as two"), "git bash")
	w.f.Set(11, 10, 110, w.f.Exe("claude (3988)", "a shell posing as an agent"), "claude (3988)")
	ch := w.decide(w.req(13))
	c := w.card()
	why, ok := w.e.WhyFor(w.f.Peer(13), "")
	if !ok || !strings.Contains(why.Requester, `ssh (13) ← "git bash" ← "claude (3988)" ← claude ←`) {
		t.Errorf("requester %q", why.Requester)
	}
	w.answer(c.ID, VerdictDeny, 30)
	got(t, ch)
}

// postern why names a login's destination as its card did: by the names
// and class the host inventory gives the verified host key, beside its
// fingerprint, so that a program refused a production login can tell its
// person which host it was.
func TestWhyNamesTheDestination(t *testing.T) {
	w := newWorld(t)
	prod := hostKey(t)
	w.nameHost("prod-db-1", "production", prod)
	p := *w.e.Policy()
	p.Rules = []Rule{{Class: "production", Mode: audit.ModeDeny}}
	w.e.SetPolicy(&p)
	r := w.req(13)
	r.Purpose, r.Dest = PurposeAuth, &Destination{HostKey: prod}
	if d := w.e.Decide(context.Background(), r); d.Allow || d.Reason != audit.ReasonPolicyDeny {
		t.Fatalf("login to prod-db-1: %+v", d)
	}
	why, _ := w.e.WhyFor(w.f.Peer(13), "")
	if why.Destination != ssh.FingerprintSHA256(prod) || !slices.Equal(why.DestinationNames, []string{"prod-db-1"}) || !slices.Equal(why.DestinationClasses, []string{"production"}) {
		t.Fatalf("why of a login to prod-db-1: destination %q, names %q, classes %q", why.Destination, why.DestinationNames, why.DestinationClasses)
	}
}

// A per-call decision says, as its card did, why the policy asks on
// every call: while the card waits, and once it is answered.
func TestWhySaysWhyACallWasAskedAbout(t *testing.T) {
	w := newWorld(t)
	p := *w.e.Policy()
	p.Mode = audit.ModePerCall
	w.e.SetPolicy(&p)
	ch := w.decide(w.req(13))
	c := w.card()
	if len(c.PerCall) == 0 {
		t.Fatalf("a per-call card says nothing of why: %+v", c)
	}
	why, ok := w.e.WhyFor(w.f.Peer(13), "")
	if !ok || why.Because == "" || !strings.Contains(why.Because, c.PerCall[0]) {
		t.Fatalf("while the per-call card %v waits, why says %+v", c.PerCall, why)
	}
	w.answer(c.ID, VerdictOnce, 30)
	got(t, ch)
	if why, _ := w.e.WhyFor(w.f.Peer(13), ""); !strings.Contains(why.Because, c.PerCall[0]) {
		t.Fatalf("once the per-call card %v was answered, why says %+v", c.PerCall, why)
	}
}

// A re-approval that was not given is explained by what ended the
// approval before it. A process_changed card is for a new process (an
// approved one ended, and this one has its executable or label; or the
// approved one executed another program): no approval of this process
// ended, and "postern why" must not tell a person, or the program told
// to report it, that the run it asks for had one.
func TestWhyReauthSaysWhatEnded(t *testing.T) {
	for reason, want := range map[audit.Reason]string{
		audit.ReasonReauthProcessChanged:    "This is a new process",
		audit.ReasonReauthGatewayRestarted:  "The gateway restarted",
		audit.ReasonReauthVaultStateChanged: "The vault was locked or changed",
	} {
		_, what, _ := explain(Decision{Reason: audit.ReasonCanceled, CardReason: reason, Card: "C1"}, false, "")
		if !strings.HasPrefix(what, want) || !strings.Contains(what, "(canceled)") {
			t.Errorf("%s: %q, want it to start %q and name the end of the card (canceled)", reason, what, want)
		}
		if reason == audit.ReasonReauthProcessChanged && strings.Contains(what, "this run had") {
			t.Errorf("%s: %q says the new process had an approval", reason, what)
		}
	}
}

// heldRecorder holds the append of one type of event until released.
type heldRecorder struct {
	typ     audit.EventType
	reached chan struct{}
	release chan struct{}
}

func (h *heldRecorder) Append(ev audit.Event) error {
	if ev.Type == h.typ {
		close(h.reached)
		<-h.release
	}
	return nil
}

// postern why knows of a card from the moment it can be seen: it said
// nothing of one whose card_shown event the audit log was still writing.
func TestWhyKnowsACardAsSoonAsItShows(t *testing.T) {
	w := newWorld(t)
	held := &heldRecorder{typ: audit.EventCardShown, reached: make(chan struct{}), release: make(chan struct{})}
	w.e.SetAudit(held)
	ch := w.decide(w.req(13))
	<-held.reached
	c := w.card()
	why, ok := w.e.WhyFor(w.f.Peer(13), "")
	close(held.release)
	if !ok || why.Card != c.ID {
		t.Errorf("while card %s shows, why says %+v", c.ID, why)
	}
	w.answer(c.ID, VerdictDeny, 30)
	got(t, ch)
}
