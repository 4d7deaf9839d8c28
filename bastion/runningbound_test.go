package bastion

import (
	"fmt"
	"testing"
	"time"
)

// The commands the bastion counts as possibly running are those whose
// end is not written yet: a gateway that relays distinct commands for
// months holds none of those that ended, where it kept every one.
func TestRunningForgetsCommandsThatEnded(t *testing.T) {
	w := newWorld(t)
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.exit(0) } })
	c := w.dial()
	for i := range 50 {
		sess, err := c.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		if err := sess.Run(fmt.Sprintf("echo %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	// The client learns the status once the end is written, just before
	// the bastion forgets the command: a deadline, not a measure.
	held := 0
	for range 1000 {
		w.srv.running.mu.Lock()
		held = len(w.srv.running.ids)
		w.srv.running.mu.Unlock()
		if held == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if held != 0 {
		t.Fatalf("after 50 distinct commands that ended, the bastion still counts %d as possibly running", held)
	}
}
