package bastion

import (
	"strings"
	"testing"
	"time"
)

// Two identical retries of a command whose outcome is unknown, sent at
// once and both approved, run once: the first uses the approval of a
// retry, and the second is refused by the retry guard (254), saying so,
// never as a journal that cannot be written (255, which a retry-on-255
// loop retries).
func TestSecondOfTwoApprovedRetriesIsRefusedByTheGuard(t *testing.T) {
	w := newWorld(t)
	e := w.lose("deploy")
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.exit(0) } })
	asked := len(w.decider.requests())
	w.decider.hold = make(chan struct{})
	type result struct {
		stderr string
		err    error
	}
	results := make(chan result, 2)
	for range 2 {
		go func() {
			_, stderr, err := w.run("deploy", nil)
			results <- result{stderr, err}
		}()
	}
	for deadline := time.Now().Add(20 * time.Second); len(w.decider.requests()) < asked+2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the two retries were not both asked about")
		}
	}
	close(w.decider.hold)
	var ran, refused int
	for range 2 {
		r := <-results
		switch status := exitStatus(t, r.err); {
		case status == 0:
			ran++
		case status == ExitDenied && strings.Contains(r.stderr, e.ID) && !strings.Contains(r.stderr, "cannot be written"):
			refused++
		default:
			t.Errorf("the second retry of %s: exit %d, stderr %q", e.ID, status, r.stderr)
		}
	}
	if ran != 1 || refused != 1 {
		t.Fatalf("%d retries ran, %d refused", ran, refused)
	}
}
