package bastion

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/bastion/journal"
	"github.com/postern/postern/internal/syncbuf"
)

// A connection to the host cut while the command runs leaves its outcome
// unknown: the client gets no exit status (ssh exits 255) and a message
// naming the journal entry; the journal and the audit log say unknown;
// and an identical command is not sent again unless a person approves.
func TestRelayConnectionCutMidCommand(t *testing.T) {
	w := newWorld(t)
	var errOut bytes.Buffer
	sess := w.startRunning("deploy", &errOut)
	w.host.cut()
	var missing *ssh.ExitMissingError
	if err := sess.Wait(); !errors.As(err, &missing) {
		t.Fatalf("Wait: %v, want no exit status", err)
	}
	e := w.only()
	if e.Status() != journal.StatusUnknown || e.Unknown.Reason != journal.ReasonUpstreamLost || e.Unknown.LastPhase != journal.PhaseDispatched || e.End != nil {
		t.Fatalf("journal %s %+v", e.Status(), e.Unknown)
	}
	if !strings.Contains(errOut.String(), "outcome is UNKNOWN (journal entry "+e.ID+")") {
		t.Fatalf("stderr %q", errOut.String())
	}
	wantEvents(t, w.audit, "command_started", "command_unknown")

	// The identical command, under any name of the host with the same
	// verified key: the card names the earlier entry; denied, it is not
	// sent and the earlier entry keeps its guard.
	w.denyRetries()
	for _, name := range []string{"127.0.0.1", "localhost"} {
		w.name = name
		_, errText, err := w.run("deploy", nil)
		if exitStatus(t, err) != ExitDenied || !strings.Contains(errText, "identical command (journal entry "+e.ID+") has an unknown outcome") {
			t.Fatalf("retry as %s: %v, stderr %q", name, err, errText)
		}
		reqs := w.decider.requests()
		if last := reqs[len(reqs)-1]; !strings.Contains(last.RetryOf, e.ID) {
			t.Fatalf("the retry card as %s shows %q", name, last.RetryOf)
		}
		if n := len(w.host.seen()); n != 1 || len(w.entries()) != 1 {
			t.Fatalf("the retry as %s reached the host (%d sessions) or the journal (%d entries)", name, n, len(w.entries()))
		}
	}
	// Approved, it runs once, as a retry of the entry.
	w.decider.setDeny(nil)
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.exit(0) } })
	if _, _, err := w.run("deploy", nil); err != nil {
		t.Fatal(err)
	}
	es := w.entries()
	if len(es) != 2 || es[0].RetryOf != e.ID || es[1].RetriedBy != es[0].ID {
		t.Fatalf("journal after the approved retry: %+v", es)
	}
}

// A command that Stop cuts off after the grace period has its unknown
// outcome in the journal and the audit log before Stop returns: the
// gateway closes both right after. Its connection ends before it records
// that (gliderlabs/ssh does not wait for a connection's sessions); the
// audit log is slow here, as under a busy disk.
func TestStopWaitsForCutCommandsToRecord(t *testing.T) {
	w := newWorld(t)
	w.audit.slowDown(audit.EventCommandUnknown, 300*time.Millisecond)
	w.startRunning("sleep 3600", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if n := w.srv.Stop(ctx); n != 1 {
		t.Fatalf("Stop cut %d connections, want 1", n)
	}
	types := w.audit.types()
	e := w.only()
	if e.Status() != journal.StatusUnknown || e.Unknown.Reason != journal.ReasonBastionStopped {
		t.Fatalf("journal after Stop: %s %+v", e.Status(), e.Unknown)
	}
	if !slices.Contains(types, string(audit.EventCommandUnknown)) {
		t.Fatalf("audit events when Stop returned: %v", types)
	}
}

// A network that goes silent while the command runs is found out by the
// keepalives: the connection is closed and the outcome is unknown.
func TestRelaySilentNetwork(t *testing.T) {
	w := newWorldWith(t, func(c *Config) { c.Keepalive = 200 * time.Millisecond }, nil)
	sess := w.startRunning("sleep 3600", nil)
	w.host.freeze()
	var missing *ssh.ExitMissingError
	if err := sess.Wait(); !errors.As(err, &missing) {
		t.Fatalf("Wait: %v, want no exit status", err)
	}
	if e := w.only(); e.Status() != journal.StatusUnknown || e.Unknown.Reason != journal.ReasonUpstreamLost {
		t.Fatalf("journal %s %+v", e.Status(), e.Unknown)
	}
}

// The host connection ends with the client connection, once no command
// runs on it.
func TestRelayHostConnectionEndsWithTheClient(t *testing.T) {
	w := newWorld(t)
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.exit(0) } })
	c := w.dial()
	for range 2 {
		sess, err := c.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		if err := sess.Run("true"); err != nil {
			t.Fatal(err)
		}
	}
	if logins, ended := w.host.connections(); logins != 1 || ended != 0 {
		t.Fatalf("%d logins, %d ended while the client is connected", logins, ended)
	}
	c.Close()
	for range 1000 {
		if _, ended := w.host.connections(); ended == 1 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the host connection outlived the client")
}

// A connection cut as the command request goes out leaves it unknown:
// the host may have started it.
func TestRelayConnectionCutAtDispatch(t *testing.T) {
	w := newWorld(t)
	w.host.set(func(h *testHost) { h.onCommand = func(*hostSession) { h.cut() } })
	// A raw channel: x/crypto's session reads stderr only once the
	// command started, and this one has no answer.
	ch, reqs, err := w.dial().OpenChannel("session", nil)
	if err != nil {
		t.Fatal(err)
	}
	go ssh.DiscardRequests(reqs)
	if ok, err := ch.SendRequest("exec", true, ssh.Marshal(struct{ S string }{"migrate"})); err == nil {
		t.Fatalf("the exec request was answered (%v)", ok)
	}
	errOut, _ := io.ReadAll(ch.Stderr())
	e := w.only()
	if e.Status() != journal.StatusUnknown || e.Unknown.Reason != journal.ReasonDispatchUnconfirmed || !strings.Contains(string(errOut), "UNKNOWN (journal entry "+e.ID+")") {
		t.Fatalf("journal %s %+v, stderr %q", e.Status(), e.Unknown, errOut)
	}
	wantEvents(t, w.audit, "command_started", "command_unknown")
}

// A host that refuses the request never ran it: safe to retry.
func TestRelayRejectedByTheHost(t *testing.T) {
	w := newWorld(t)
	w.host.set(func(h *testHost) { h.reject = true })
	if _, _, err := w.run("ls", nil); err == nil || errors.As(err, new(*ssh.ExitError)) {
		t.Fatalf("err %v, want the request refused", err)
	}
	if e := w.only(); e.Status() != journal.StatusRetrySafe || e.End.Outcome != journal.OutcomeRejected {
		t.Fatalf("journal %s %+v", e.Status(), e.End)
	}
	// The audit log's account of the command, started, has its end too:
	// without it the log read as of a command that may have run.
	wantEvents(t, w.audit, "command_started", "command_ended")
	w.audit.mu.Lock()
	end := w.audit.events[1]
	w.audit.mu.Unlock()
	if end.Detail["outcome"] != journal.OutcomeRejected || end.Detail["entry"] != w.only().ID {
		t.Fatalf("command_ended %+v", end.Detail)
	}
}

// A channel the host closes without an exit status or signal, on a
// connection that still answers, says nothing of how the command ended:
// a relay on the host that lost its own connection, or postern's own
// bastion, closes it so for an outcome that is unknown. The journal
// records it unknown, ssh gets no status (it exits 255), and an
// identical command asks as a retry of it.
func TestRelayClosedWithoutStatusIsUnknown(t *testing.T) {
	w := newWorld(t)
	w.host.set(func(h *testHost) {
		h.handle = func(s *hostSession) {
			io.WriteString(s.ch, "bye")
			s.ch.Close()
		}
	})
	out, errText, err := w.run("deploy", nil)
	var missing *ssh.ExitMissingError
	if !errors.As(err, &missing) || out != "bye" {
		t.Fatalf("err %v, stdout %q", err, out)
	}
	e := w.only()
	if e.Status() != journal.StatusUnknown || e.End != nil || e.Unknown.Reason != journal.ReasonNoStatus || e.Unknown.LastPhase != journal.PhaseDispatched {
		t.Fatalf("journal %s, end %+v, unknown %+v", e.Status(), e.End, e.Unknown)
	}
	if !strings.Contains(errText, "closed the command's channel without an exit status; its outcome is UNKNOWN (journal entry "+e.ID+")") {
		t.Fatalf("stderr %q", errText)
	}
	wantEvents(t, w.audit, "command_started", "command_unknown")
	w.denyRetries()
	if _, errText, err := w.run("deploy", nil); exitStatus(t, err) != ExitDenied || !strings.Contains(errText, "identical command (journal entry "+e.ID+") has an unknown outcome") {
		t.Fatalf("the identical command: %v, stderr %q", err, errText)
	}
	if n := len(w.host.seen()); n != 1 {
		t.Fatalf("the identical command reached the host: %d sessions", n)
	}
}

// A client that goes away does not end the command: the relay reads the
// rest of its output (a command blocked on a full window would never
// exit), closes its stdin, and journals its real exit.
func TestRelayClientGone(t *testing.T) {
	w := newWorld(t)
	release := make(chan struct{})
	stdinEOF := make(chan struct{})
	w.host.set(func(h *testHost) {
		h.handle = func(s *hostSession) {
			io.WriteString(s.ch, "started\n")
			go func() {
				io.Copy(io.Discard, s.ch)
				close(stdinEOF)
			}()
			<-release
			s.ch.Write(make([]byte, 8<<20)) // more than any window
			s.exit(7)
		}
	})
	c := w.dial()
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	stdout, _ := sess.StdoutPipe()
	if err := sess.Start("long"); err != nil {
		t.Fatal(err)
	}
	if l, _ := bufio.NewReader(stdout).ReadString('\n'); l != "started\n" {
		t.Fatalf("read %q", l)
	}
	c.Close()
	<-stdinEOF
	close(release)
	e := w.ended("long")
	if e.End == nil || e.End.Outcome != journal.OutcomeExited || e.End.ExitStatus != 7 || !e.End.ClientGone || e.End.BytesOut != 8<<20+8 {
		t.Fatalf("journal %s %+v %+v", e.Status(), e.End, e.Unknown)
	}
}

// A command that Stop cuts off after the grace period is recorded
// unknown, and its client is told so, naming the journal entry, as for
// any other unknown outcome: the person whose command was cut by a
// gateway that stopped learns what to look up, where the connection
// closed with nothing said.
func TestStopTellsTheClientOfTheCommandsItCutOff(t *testing.T) {
	w := newWorld(t)
	errOut := &syncbuf.Buffer{}
	sess := w.startRunning("sleep 3600", errOut)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	w.srv.Stop(ctx)
	sess.Wait()
	e := w.only()
	if e.Status() != journal.StatusUnknown || e.Unknown.Reason != journal.ReasonBastionStopped {
		t.Fatalf("journal after Stop: %s %+v", e.Status(), e.Unknown)
	}
	if !strings.Contains(errOut.String(), "UNKNOWN (journal entry "+e.ID+")") || !strings.Contains(errOut.String(), "gateway") {
		t.Fatalf("the client of a command Stop cut off was told %q", errOut.String())
	}
}
