package bastion

import (
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/bastion/journal"
)

// forward relays a local port to the host, as a port forwarded to it (a
// NAT rule, a second Port line, or a forwarder any local program can
// start) does, and returns that port.
func (w *world) forward() int {
	w.t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				u, err := net.Dial("tcp", w.host.l.Addr().String())
				if err != nil {
					return
				}
				defer u.Close()
				go io.Copy(u, c)
				io.Copy(c, u)
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

// lose runs command until the host's connections are cut, and returns
// its journal entry, whose outcome is then unknown.
func (w *world) lose(command string) *journal.Entry {
	w.t.Helper()
	sess := w.startRunning(command, io.Discard)
	w.host.cut()
	sess.Wait()
	e := w.ended(command)
	if e.Status() != journal.StatusUnknown {
		w.t.Fatalf("%q after its connection was cut: %s", command, e.Status())
	}
	return e
}

// The host's key says which host a command ran on, whatever port reached
// it: the identical command through another port to the same host is a
// retry of the command whose outcome is unknown.
func TestRelayRetryGuardOverAnotherPort(t *testing.T) {
	w := newWorld(t)
	e := w.lose("deploy")
	port := w.forward()
	line := "[127.0.0.1]:" + strconv.Itoa(port) + " " + string(ssh.MarshalAuthorizedKey(w.host.key.PublicKey()))
	f, err := os.OpenFile(w.srv.cfg.KnownHosts[0], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(line)
	f.Close()
	w.denyRetries()
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.exit(0) } })
	w.port = port
	_, errText, err := w.run("deploy", nil)
	if exitStatus(t, err) != ExitDenied || !strings.Contains(errText, "identical command (journal entry "+e.ID+") has an unknown outcome") {
		t.Fatalf("retry through port %d: %v, stderr %q", port, err, errText)
	}
	if n := len(w.host.seen()); n != 1 || len(w.entries()) != 1 {
		t.Fatalf("the retry through another port reached the host (%d sessions) or the journal (%d entries)", n, len(w.entries()))
	}
}

// The decision learns the kind of session from the session's request,
// not from the command: a command whose bytes read like a shell is an
// exec, and a shell fed a script on its input has no terminal. (The card
// showed "(interactive shell)" for all three.)
func TestRelayKindIsNotTheCommands(t *testing.T) {
	w := newWorld(t)
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.exit(0) } })
	if _, _, err := w.run("(interactive shell)", nil); exitStatus(t, err) != 0 {
		t.Fatal(err)
	}
	sess, err := w.dial().NewSession()
	if err != nil {
		t.Fatal(err)
	}
	sess.Stdin = strings.NewReader("rm -rf /srv/data\n")
	if err := sess.Shell(); err != nil {
		t.Fatal(err)
	}
	if err := sess.Wait(); exitStatus(t, err) != 0 {
		t.Fatal(err)
	}
	reqs := w.decider.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d decisions asked, want 2", len(reqs))
	}
	if r := reqs[0]; r.Relay != approvals.RelayExec || string(r.Command) != "(interactive shell)" {
		t.Errorf("the command \"(interactive shell)\" was asked about as %s %q", r.Relay, r.Command)
	}
	if r := reqs[1]; r.Relay != approvals.RelayShell || r.Terminal || len(r.Command) != 0 {
		t.Errorf("a shell with no terminal was asked about as %s %q, terminal %v", r.Relay, r.Command, r.Terminal)
	}
}

// An approved retry that the host rejected ran nothing: the command whose
// outcome is unknown guards again, and the next identical one is asked
// about as a retry of it, not sent on the approval the rejected one used.
func TestRelayRetryTheHostRejectedLeavesTheGuard(t *testing.T) {
	w := newWorld(t)
	e := w.lose("deploy")
	w.host.set(func(h *testHost) { h.reject = true })
	if _, _, err := w.run("deploy", nil); err == nil {
		t.Fatal("the host rejected the approved retry, and the client was not told")
	}
	if asked := w.decider.requests(); !strings.Contains(asked[len(asked)-1].RetryOf, e.ID) {
		t.Fatalf("the first retry was not asked about as one: %+v", asked[len(asked)-1])
	}
	w.denyRetries()
	w.host.set(func(h *testHost) {
		h.reject = false
		h.handle = func(s *hostSession) { s.exit(0) }
	})
	_, errText, err := w.run("deploy", nil)
	if exitStatus(t, err) != ExitDenied || !strings.Contains(errText, "identical command (journal entry "+e.ID+") has an unknown outcome") {
		t.Fatalf("an identical command after the approved retry was rejected: %v, stderr %q, %d commands reached the host", err, errText, len(w.host.seen()))
	}
}

// The card of a retry says what the journal knows of the earlier
// attempt, not only that its outcome is unknown: how it was lost and how
// far it had gone, or what was last found out about it, such as a person
// finding it still running on the host.
func TestRelayRetryCardSaysWhatIsKnownOfTheEarlierAttempt(t *testing.T) {
	w := newWorld(t)
	e := w.lose("deploy")
	w.denyRetries()
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.exit(0) } })
	retryOf := func() string {
		w.run("deploy", nil)
		asked := w.decider.requests()
		return asked[len(asked)-1].RetryOf
	}
	if got := retryOf(); !strings.Contains(got, e.ID) || !strings.Contains(got, "upstream_lost, dispatched") {
		t.Fatalf("the retry card after the connection was lost: %q", got)
	}
	if _, err := w.srv.ResolveByHand(e.ID, journal.Resolution{Result: journal.ResultStillRunning, Evidence: "ps shows it"}, "alice"); err != nil {
		t.Fatal(err)
	}
	if got := retryOf(); !strings.Contains(got, e.ID) || !strings.Contains(got, "still_running") {
		t.Fatalf("the retry card once the command was found still running: %q", got)
	}
	if n := len(w.host.seen()); n != 1 {
		t.Fatalf("%d commands reached the host", n)
	}
}
