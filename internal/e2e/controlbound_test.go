package e2e

import (
	"strings"
	"testing"
	"time"
)

// statusAtTheBound runs postern status until it is answered. At the
// user's bound on control connections it is refused until one of them
// has been idle a second (the bound then closes that one for it), and
// asks again, for up to 20 s; any other failure fails the test, said to
// be what.
func statusAtTheBound(t *testing.T, e *Env, what string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		r := e.Run("postern", "status")
		if r.Code == 0 {
			return
		}
		if !strings.Contains(r.Stderr, "too many connections from this user") || time.Now().After(deadline) {
			t.Fatalf("postern status %s: %s", what, r)
		}
	}
}
