package approvals

import (
	"strings"
	"testing"
	"time"
)

// Under a session_lifetime, a session ends once it has passed, while its
// run lives: the card's Covers line, which an approval covers, says so,
// where it read as if the session lasted until the run exits.
func TestCardCoversSaysTheSessionLifetime(t *testing.T) {
	w := newWorld(t)
	p := *w.e.Policy()
	p.Lifetime = 2 * time.Hour
	w.e.SetPolicy(&p)
	ch := w.decide(w.req(13))
	c := w.card()
	if !strings.Contains(c.Covers, "at most 2h0m0s after the approval") {
		t.Errorf("under a session lifetime of %v, the card says it covers %q", p.Lifetime, c.Covers)
	}
	w.answer(c.ID, VerdictDeny, 30)
	got(t, ch)
}
