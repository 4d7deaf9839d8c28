package bastion

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/bastion/journal"
	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/procid/proctest"
)

// waitAsked waits until the decider was asked n times.
func (w *world) waitAsked(n int) {
	w.t.Helper()
	for range 1000 {
		if len(w.decider.requests()) >= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	w.t.Fatalf("the decision was not asked %d times", n)
}

// waitClientGone waits until the context of the decision asked i-th
// (from 0) has ended: the bastion has seen its client go.
func (w *world) waitClientGone(i int) {
	w.t.Helper()
	for range 1000 {
		w.decider.mu.Lock()
		ctx := w.decider.ctxs[i]
		w.decider.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	w.t.Fatalf("the bastion never saw the client of decision %d go", i)
}

// established logs a client in with a first command, so that the
// decisions that follow are about commands on an authenticated upstream
// connection (as a card for a later command of an ssh session is).
func (w *world) established() *ssh.Client {
	w.t.Helper()
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.exit(0) } })
	c := w.dial()
	sess, err := c.NewSession()
	if err != nil {
		w.t.Fatal(err)
	}
	if err := sess.Run("true"); err != nil {
		w.t.Fatal(err)
	}
	return c
}

// A card whose client went away is withdrawn: the decision waits with the
// client's context, and the command never reaches the host.
func TestCardOfAGoneClientIsWithdrawn(t *testing.T) {
	w := newWorld(t)
	c := w.established()
	w.decider.hold = make(chan struct{})
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	go sess.Start("touch /tmp/never") // answered once decided
	w.waitAsked(2)
	c.Close() // the client is killed while its card waits
	e := w.ended("touch /tmp/never")
	if e.End.Outcome != journal.OutcomeDenied || e.End.ErrorMsg != string(audit.ReasonCanceled) {
		t.Fatalf("entry of a gone client: %+v", e.End)
	}
	close(w.decider.hold)
	time.Sleep(100 * time.Millisecond)
	if n := len(w.host.seen()); n != 1 {
		t.Fatalf("%d commands reached the host, want the first only", n)
	}
}

// sshRequester is the pid of the ssh process behind the client of
// sshRequesterWorld's connection.
const sshRequester = 4242

// sshRequesterWorld is a world whose process table (a fake /proc) has
// the client's connection come from "postern connect", a child of ssh
// (sshRequester), and a connection established through it.
func sshRequesterWorld(t *testing.T) (*proctest.Fake, *world, *ssh.Client) {
	t.Helper()
	f := proctest.New(t)
	f.Set(1, 0, 1, f.Exe("init", "init"), "init")
	f.Set(sshRequester, 1, 100, f.Exe("ssh", "ssh"), "ssh", "host")
	f.SetSession(os.Getpid(), sshRequester, 200, sshRequester, f.Exe("postern", "postern"), "postern", "connect", "host") // in ssh's session, as its ProxyCommand
	w := newWorldWith(t, func(c *Config) { c.Procs = f.Table }, nil)
	return f, w, w.established()
}

// A card is withdrawn when the ssh process behind the connection runs
// another program while it waits: an exec keeps the pid and the
// connection, and gives no signal. (The process table is a fake one, the
// test being the helper, postern connect, and its parent the ssh.)
func TestCardOfARequesterThatExecsIsWithdrawn(t *testing.T) {
	f, w, c := sshRequesterWorld(t)
	w.decider.hold = make(chan struct{})
	defer close(w.decider.hold)
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	go sess.Start("touch /tmp/never") // answered once decided
	w.waitAsked(2)
	f.Exec(sshRequester, f.Exe("sleep", "sleep"), "sleep", "60")
	e := w.ended("touch /tmp/never")
	if e.End.Outcome != journal.OutcomeDenied {
		t.Fatalf("entry of a requester that runs another program: %+v", e.End)
	}
	// The decision is told why its wait ended (the engine records it as
	// identity_mismatch).
	w.decider.mu.Lock()
	why := context.Cause(w.decider.ctxs[1])
	w.decider.mu.Unlock()
	if !errors.Is(why, procid.ErrChanged) {
		t.Fatalf("the wait ended for %v, not for the requester's change", why)
	}
	if n := len(w.host.seen()); n != 1 {
		t.Fatalf("%d commands reached the host, want the first only", n)
	}
}

// A command asked for after the ssh process behind the connection ran
// another program is refused before any decision: no card is put up
// about the process the connection was made by, which is no longer there.
func TestCommandOfARequesterThatExecutedIsNotDecided(t *testing.T) {
	f, w, c := sshRequesterWorld(t)
	w.decider.mu.Lock()
	before := len(w.decider.asked)
	w.decider.mu.Unlock()
	sent := len(w.host.seen())
	f.Exec(sshRequester, f.Exe("sleep", "sleep"), "sleep", "60")
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	go sess.Start("touch /tmp/never")
	e := w.ended("touch /tmp/never")
	if e.End.Outcome != journal.OutcomeDenied {
		t.Fatalf("entry of a requester that ran another program: %+v", e.End)
	}
	w.decider.mu.Lock()
	asked := w.decider.asked[before:]
	w.decider.mu.Unlock()
	if len(asked) != 0 {
		t.Fatalf("%d decisions were asked about a requester that had run another program, want none", len(asked))
	}
	if n := len(w.host.seen()) - sent; n != 0 {
		t.Fatalf("%d commands of the requester that ran another program reached the host", n)
	}
}

// A decision that never waits on its context (a grant decides at once)
// watches nothing: no re-check of the requester runs while it decides.
// A requester that runs another program meanwhile still gets nothing
// sent: the command goes only if the requester is the same after the
// decision.
func TestDecisionThatDoesNotWaitWatchesNothing(t *testing.T) {
	f, w, c := sshRequesterWorld(t)
	w.decider.hold, w.decider.deaf = make(chan struct{}), true
	decide := sync.OnceFunc(func() { close(w.decider.hold) })
	defer decide()
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	go sess.Start("touch /tmp/never")
	w.waitAsked(2)
	f.Exec(sshRequester, f.Exe("sleep", "sleep"), "sleep", "60")
	time.Sleep(3 * procid.RecheckEvery) // a watch would have re-checked by now
	w.decider.mu.Lock()
	ctx := w.decider.ctxs[1]
	w.decider.mu.Unlock()
	if ctx.Err() != nil {
		t.Fatalf("a decision that never waited on its context was watched: it ended for %v", context.Cause(ctx))
	}
	decide()
	e := w.ended("touch /tmp/never")
	if e.End.Outcome != journal.OutcomeFailedToStart || !strings.Contains(e.End.ErrorMsg, "the client left") {
		t.Fatalf("entry of a requester that ran another program during the decision: %+v", e.End)
	}
	if n := len(w.host.seen()); n != 1 {
		t.Fatalf("%d commands reached the host, want the first only", n)
	}
}

// An answer that comes as the client goes sends nothing: the command is
// dispatched only if its client is still there after the answer.
func TestApprovedCommandOfAGoneClientIsNotSent(t *testing.T) {
	w := newWorld(t)
	c := w.established()
	w.decider.hold, w.decider.deaf = make(chan struct{}), true
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	go sess.Start("touch /tmp/never") // answered once decided
	w.waitAsked(2)
	c.Close()
	w.waitClientGone(1)   // the bastion sees the client go
	close(w.decider.hold) // and then the approval arrives
	e := w.ended("touch /tmp/never")
	if e.End.Outcome != journal.OutcomeFailedToStart || !strings.Contains(e.End.ErrorMsg, "the client left") || e.Status() != journal.StatusRetrySafe {
		t.Fatalf("entry of a gone client: %+v", e.End)
	}
	if n := len(w.host.seen()); n != 1 {
		t.Fatalf("%d commands reached the host, want the first only", n)
	}
}

// The identical-command guard covers commands still running: the card
// says so, and the request needs a person.
func TestIdenticalRunningCommandIsAsked(t *testing.T) {
	w := newWorld(t)
	c := w.dial()
	release := holdRunning(w, c, "deploy --all")
	second, _ := c.NewSession()
	if err := second.Run("deploy --all"); err == nil {
		t.Fatal("an identical command ran while the first still ran")
	}
	asked := w.decider.requests()
	last := asked[len(asked)-1]
	firstID := w.entries()[len(w.entries())-1].ID
	if last.Running == "" || !strings.Contains(last.Running, "RUNNING") || !strings.Contains(last.Running, firstID) {
		t.Fatalf("the request for the identical command: %+v", last)
	}
	// Another command is not held up, and once the first ends the same
	// command is plain again.
	other, _ := c.NewSession()
	go other.Run("uptime")
	close(release)
	for {
		if e, err := w.journal.Get(firstID); err == nil && e.End != nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	third, _ := c.NewSession()
	if err := third.Run("deploy --all"); err != nil {
		t.Fatalf("the command after the first ended: %v", err)
	}
	asked = w.decider.requests()
	if last := asked[len(asked)-1]; last.Running != "" {
		t.Fatalf("a command no longer running still counted: %+v", last)
	}
}

// Identical commands sent at the same moment, on connections of their
// own, are decided side by side: none is RUNNING yet when the others ask.
// The guard still sees them: one may run as its grant says, each other
// one is asked about as identical to a command under way.
// holdRunning starts command on c, on a host that holds every command
// until release is closed, and waits until the host runs it; from then
// on the decider refuses a request that names an identical command
// running.
func holdRunning(w *world, c *ssh.Client, command string) (release chan struct{}) {
	release = make(chan struct{})
	w.host.set(func(h *testHost) {
		h.handle = func(s *hostSession) {
			<-release
			s.exit(0)
		}
	})
	first, _ := c.NewSession()
	first.Start(command)
	for len(w.host.seen()) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	w.decider.setDeny(func(r *approvals.Request) audit.Reason {
		if r.Running != "" {
			return audit.ReasonDenied
		}
		return ""
	})
	return release
}

// sshd logs user:style in as user: the command sent as alice:style while
// the same one sent as alice still runs is the same command on the same
// account, and is asked about.
func TestIdenticalRunningCommandUnderALoginStyleIsAsked(t *testing.T) {
	w := newWorld(t)
	defer close(holdRunning(w, w.dial(), "deploy --all"))
	w.user = "alice:style"
	second, _ := w.dial().NewSession()
	if err := second.Run("deploy --all"); err == nil || len(w.host.seen()) != 1 {
		t.Fatalf("the command sent as alice:style ran while the one sent as alice still ran (%d commands reached the host)", len(w.host.seen()))
	}
}

// A retry of a command whose outcome is unknown, while an identical one
// still runs, is asked about with both on the card: whoever approves
// running it again learns that it would also run alongside the one still
// running.
func TestRetryWhileAnIdenticalCommandRunsShowsBoth(t *testing.T) {
	w := newWorld(t)
	defer close(holdRunning(w, w.dial(), "deploy --all"))
	running := w.entries()[0]
	// An identical command sent at the same time, approved to run
	// alongside, lost its connection.
	lost := &journal.Entry{Target: running.Target, Kind: journal.KindExec, Command: []byte("deploy --all")}
	if err := w.journal.Start(lost); err != nil {
		t.Fatal(err)
	}
	w.journal.Dispatched(lost.ID)
	if _, err := w.journal.MarkUnknown(lost.ID, journal.Unknown{Reason: journal.ReasonUpstreamLost}); err != nil {
		t.Fatal(err)
	}
	w.denyRetries()
	retry, _ := w.dial().NewSession()
	if err := retry.Run("deploy --all"); err == nil {
		t.Fatal("the retry ran")
	}
	asked := w.decider.requests()
	last := asked[len(asked)-1]
	if !strings.Contains(last.RetryOf, lost.ID) || !strings.Contains(last.Running, running.ID) {
		t.Fatalf("the retry, while %s still runs, was asked about as retry of %q, running %q", running.ID, last.RetryOf, last.Running)
	}
}

func TestIdenticalCommandsAtOnceAreAsked(t *testing.T) {
	for _, held := range []bool{true, false} {
		t.Run(fmt.Sprintf("decisions held %v", held), func(t *testing.T) {
			w := newWorld(t)
			release := make(chan struct{})
			defer close(release)
			w.host.set(func(h *testHost) {
				h.handle = func(s *hostSession) {
					<-release
					s.exit(0)
				}
			})
			w.decider.setDeny(func(r *approvals.Request) audit.Reason {
				if r.Running != "" {
					return audit.ReasonDenied
				}
				return ""
			})
			hold := make(chan struct{})
			letGo := sync.OnceFunc(func() { close(hold) })
			defer letGo()
			if held {
				w.decider.mu.Lock()
				w.decider.hold, w.decider.deaf = hold, true
				w.decider.mu.Unlock()
			}
			const n = 4
			var clients []*ssh.Client
			for range n {
				clients = append(clients, w.dial())
			}
			refused := make(chan error, n)
			for _, c := range clients {
				go func() {
					s, err := c.NewSession()
					if err == nil {
						err = s.Run("deploy --all")
					}
					refused <- err
				}()
			}
			if held {
				for len(w.decider.requests()) < n {
					time.Sleep(5 * time.Millisecond)
				}
				letGo()
			}
			for range n - 1 {
				select {
				case err := <-refused:
					if err == nil {
						t.Fatal("an identical command ran to its end while the first still runs")
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("%d identical commands sent at once reached the host", len(w.host.seen()))
				}
			}
			running := 0
			for _, r := range w.decider.requests() {
				if r.Running == "" {
					running++
				}
			}
			// The others were refused: the one let through may still be
			// on its way to the host.
			for deadline := time.Now().Add(10 * time.Second); len(w.host.seen()) == 0 && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			if running != 1 || len(w.host.seen()) != 1 {
				t.Fatalf("%d identical commands sent at once were decided as the only one, %d reached the host; want 1 and 1", running, len(w.host.seen()))
			}
		})
	}
}

// The journal names a command's requester as a card does: a process
// whose name holds a space and a parenthesis is quoted, and does not read
// as two processes, one of them with another's pid.
func TestJournalRequesterNamesAreQuoted(t *testing.T) {
	f := proctest.New(t)
	f.Set(1, 0, 1, f.Exe("init", "init"), "init")
	f.Set(100, 1, 50, f.Exe("git bash", "a git posing as two"), "git bash")
	f.Set(sshRequester, 100, 100, f.Exe("claude (3988)", "an ssh posing as an agent"), "claude (3988)", "host")
	f.SetSession(os.Getpid(), sshRequester, 200, sshRequester, f.Exe("postern", "postern"), "postern", "connect", "host")
	w := newWorldWith(t, func(c *Config) { c.Procs = f.Table }, nil)
	sess, err := w.established().NewSession()
	if err != nil {
		t.Fatal(err)
	}
	sess.Run("true")
	e := w.ended("true")
	if want := `"claude (3988)" (4242) ← "git bash" ← init (1)`; e.Requester != want {
		t.Fatalf("the journal names the requester %q, want %q", e.Requester, want)
	}
}

// A card may wait for its answer as long as card_timeout, longer than
// connecting to the host may take: the bound on dialing is no bound on
// the person, and a command approved after it runs.
func TestApprovalAnsweredPastTheDialTimeoutRuns(t *testing.T) {
	w := newWorldWith(t, func(c *Config) { c.DialTimeout = 200 * time.Millisecond }, nil)
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.exit(0) } })
	hold := make(chan struct{})
	w.decider.mu.Lock()
	w.decider.hold = hold
	w.decider.mu.Unlock()
	done := make(chan error, 1)
	go func() {
		_, _, err := w.run("uptime", nil)
		done <- err
	}()
	w.waitAsked(1)
	time.Sleep(time.Second) // the person reads the card
	close(hold)
	if err := <-done; err != nil {
		t.Fatalf("the command approved after the dial's bound: %v; journal %+v", err, w.only().End)
	}
	if n := len(w.host.seen()); n != 1 {
		t.Fatalf("the host saw %d sessions, want 1", n)
	}
}

// A client that closes the command's channel while its card waits has
// gone as surely as one that closes its connection: with ControlMaster,
// an ssh interrupted while it waits (Ctrl-C) closes its session on the
// master's connection, which stays. Its card is withdrawn, and an answer
// that crosses its going sends nothing.
func TestCommandOfAClosedChannelIsNotSent(t *testing.T) {
	w := newWorld(t)
	c := w.established()
	w.decider.hold, w.decider.deaf = make(chan struct{}), true
	answer := sync.OnceFunc(func() { close(w.decider.hold) })
	defer answer()
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	go sess.Start("touch /tmp/never") // answered once decided
	w.waitAsked(2)
	sess.Close()        // the session goes, the connection stays
	w.waitClientGone(1) // the bastion sees the client go
	answer()            // and then the approval arrives
	e := w.ended("touch /tmp/never")
	if e.End == nil || e.End.Outcome != journal.OutcomeFailedToStart || !strings.Contains(e.End.ErrorMsg, "the client left") {
		t.Fatalf("entry of a client that closed its session: %+v", e)
	}
	if n := len(w.host.seen()); n != 1 {
		t.Fatalf("%d commands reached the host, want the first only", n)
	}
}

// A client that goes while its approved command is being journaled (the
// journal's and the audit log's writes take their time on a busy disk)
// gets nothing sent: the command goes only if its client is still there
// once it is recorded.
func TestCommandOfAClientGoneAsItIsRecordedIsNotSent(t *testing.T) {
	w := newWorld(t)
	c := w.established()
	w.audit.mu.Lock()
	w.audit.before = func(e audit.Event) {
		if e.Type != audit.EventCommandStarted || e.Detail["command"] != "touch /tmp/never" {
			return
		}
		c.Close()
		for range 1000 { // until the bastion has seen the connection end
			w.srv.mu.Lock()
			n := len(w.srv.active)
			w.srv.mu.Unlock()
			if n == 0 {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Error("the bastion never saw the connection end")
	}
	w.audit.mu.Unlock()
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	go sess.Start("touch /tmp/never")
	e := w.ended("touch /tmp/never")
	if e.End == nil || e.End.Outcome != journal.OutcomeFailedToStart || !strings.Contains(e.End.ErrorMsg, "the client left") {
		t.Fatalf("entry of a client gone as its command was recorded: %+v, end %+v, unknown %+v", e.Status(), e.End, e.Unknown)
	}
	if n := len(w.host.seen()); n != 1 {
		t.Fatalf("%d commands reached the host, want the first only", n)
	}
}
