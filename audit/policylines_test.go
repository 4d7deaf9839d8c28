package audit

import (
	"strings"
	"testing"
	"time"
)

// An activity line of a policy change card's course names the card and,
// once it is answered, who answered it, and one of a host inventory
// change who made it, as the lines of key changes name who made them.
func TestActivityOfAPolicyChangeNamesTheCardAndWhoAnswered(t *testing.T) {
	now := time.Now()
	lines := Activity([]Event{
		{Seq: 2, Time: now, Type: EventPolicyChangePending, Card: "C1", Reason: ReasonPolicyChange, Detail: map[string]string{"changes": "approval: session → none"}},
		{Seq: 3, Time: now, Type: EventPolicyChangeDenied, Card: "C1", Reason: ReasonDenied, Approver: "console tty:/dev/pts/3", Detail: map[string]string{"changes": "approval: session → none"}},
		{Seq: 4, Time: now, Type: EventPolicyChangeApproved, Card: "C2", Approver: "console tty:/dev/pts/3", Detail: map[string]string{"changes": "approval: session → none"}},
		{Seq: 5, Time: now, Type: EventHostAdded, Approver: "console tty:/dev/pts/3", Detail: map[string]string{"host": "prod-db-1"}},
	}, time.Time{})
	if len(lines) != 4 {
		t.Fatalf("lines: %v", lines)
	}
	for i, want := range []string{" card=C1 ", " card=C1 ", " card=C2 "} {
		if !strings.Contains(lines[i].Text, want) {
			t.Errorf("line %d does not name its card: %s", i, lines[i].Text)
		}
	}
	for _, l := range lines[1:] {
		if !strings.Contains(l.Text, ` by="console tty:/dev/pts/3"`) {
			t.Errorf("an answered card's line does not say who answered: %s", l.Text)
		}
	}
}
