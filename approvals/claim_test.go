package approvals

import (
	"strings"
	"testing"

	"github.com/postern/postern/internal/safetext"
)

// A command line may be megabytes long, and six times that once escaped
// in JSON; every console is sent every pending card with each snapshot,
// which a few such cards would make longer than a console reads. A card
// keeps a bounded claim, marked as cut, whose start it shows as before.
func TestCardKeepsABoundedClaim(t *testing.T) {
	w := newWorld(t)
	huge := strings.Repeat("\x01", 1<<20)
	w.f.Set(40, 1, 400, w.f.Exe("ssh", "ssh"), "ssh", "prod", huge, "last")
	ch := w.decide(w.req(40))
	c := w.card()
	n := 0
	for _, a := range c.Claim {
		n += len(a)
	}
	if n > maxClaim+64 {
		t.Fatalf("the card keeps %d bytes of the claimed command line (%d arguments)", n, len(c.Claim))
	}
	if len(c.Claim) < 3 || c.Claim[0] != "ssh" || c.Claim[1] != "prod" || !strings.Contains(c.Claim[len(c.Claim)-1], safetext.Marker+"(+") {
		t.Fatalf("claim not kept whole up to its cut, or not marked: %q…", c.Claim[:min(len(c.Claim), 2)])
	}
	if !strings.Contains(c.Text(), `command ssh prod \x01\x01`) {
		t.Fatalf("the card does not show the claim's start:\n%s", c.Text())
	}
	w.answer(c.ID, VerdictDeny, 30)
	got(t, ch)
}
