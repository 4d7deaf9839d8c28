package bastion

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// A journal is retired only once every command journaled through the
// bastion has recorded its end; a command after it is refused, not
// sent, and not journaled.
func TestRetiredJournalRefusesCommands(t *testing.T) {
	w := newWorld(t)
	release := make(chan struct{})
	w.host.set(func(h *testHost) {
		h.handle = func(s *hostSession) {
			<-release
			s.exit(0)
		}
	})
	ran := make(chan error, 1)
	go func() {
		sess, err := w.dial().NewSession()
		if err == nil {
			err = sess.Run("deploy")
		}
		ran <- err
	}()
	for deadline := time.Now().Add(time.Minute); len(w.entries()) == 0 || w.only().Dispatched.IsZero(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the command never ran")
		}
	}
	if n := w.srv.RetireJournal(); n != 1 {
		t.Fatalf("retired with a command running: %d running", n)
	}
	close(release)
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	if e := w.only(); e.End == nil {
		t.Fatalf("the command's end was not journaled: %+v", e)
	}
	// Its session returns just after the client has its status.
	for deadline := time.Now().Add(time.Minute); w.srv.RetireJournal() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("not retired once the command ended")
		}
	}
	_, errText, err := w.run("uptime", nil)
	if exitStatus(t, err) != ExitUnreachable || !strings.Contains(errText, "journal was replaced") || len(w.entries()) != 1 || len(w.host.seen()) != 1 {
		t.Fatalf("a command after the journal was retired: %v, stderr %q, %d entries, %d sessions on the host", err, errText, len(w.entries()), len(w.host.seen()))
	}
}

// A command whose end is journaled no longer holds the journal, though
// its client has not taken all its output yet (a pager left on its first
// screen): "postern journal new" said it still ran, and waited for the
// client, for as long as the person left the pager open.
func TestEndedCommandOfASlowClientDoesNotHoldTheJournal(t *testing.T) {
	w := newWorld(t)
	w.host.set(func(h *testHost) {
		h.handle = func(s *hostSession) {
			s.ch.Write(make([]byte, 3<<20)) // more than the client's window, less than the bastion holds besides
			s.exit(0)
		}
	})
	ch, reqs, err := w.dial().OpenChannel("session", nil)
	if err != nil {
		t.Fatal(err)
	}
	go ssh.DiscardRequests(reqs)
	// The client asks for the command and never reads its output.
	if _, err := ch.SendRequest("exec", true, ssh.Marshal(struct{ S string }{"cat big.log"})); err != nil {
		t.Fatal(err)
	}
	if e := w.ended("cat big.log"); e.End == nil {
		t.Fatalf("the command's end was not journaled: %+v", e)
	}
	// The session lets go of the journal just after it writes the end,
	// which this test may read first: a moment is allowed, not the
	// pager's time (the client reads nothing until the test ends).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		n := w.srv.RetireJournal()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the journal is held by %d command(s), want none: the command's end is journaled", n)
		}
	}
	ch.Close()
}
