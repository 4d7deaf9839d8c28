package gateway

import (
	"strings"
	"testing"
	"time"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
)

// A card approved by a click offers Approve once; a per-call login, which
// takes the destination's name typed out, offers Deny alone and says where
// to approve it.
func TestCardNoteOffersApprovalOnlyWhereAClickIsEnough(t *testing.T) {
	now := time.Now()
	card := approvals.CardView{ID: "C1", Mode: audit.ModeSession, Purpose: approvals.PurposeAuth, Created: now, Expires: now.Add(time.Minute),
		Subjects: []approvals.RunView{{ProcessView: approvals.ProcessView{Name: "ssh", PID: 7}}}}
	if n := cardNote(&card); len(n.Actions) != 2 || n.Actions[0].Key != actionOnce {
		t.Fatalf("a session card's notification: %+v", n.Actions)
	}
	card.Mode = audit.ModePerCall
	card.Destination = &approvals.DestView{Names: []string{"prod-db"}}
	n := cardNote(&card)
	if len(n.Actions) != 1 || n.Actions[0].Key != actionDeny || !strings.Contains(n.Body, `type "prod-db" in postern approve`) {
		t.Fatalf("a per-call login's notification: %+v\n%s", n.Actions, n.Body)
	}
}

// The name a per-call login takes typed out is named whole, however
// long (see CardView.QuotedWord).
func TestCardNoteNamesTheWholeWord(t *testing.T) {
	now := time.Now()
	name := strings.Repeat("cluster-eu-west-", 5) + "prod-db-1"
	card := approvals.CardView{ID: "C1", Mode: audit.ModePerCall, Purpose: approvals.PurposeAuth, Created: now, Expires: now.Add(time.Minute),
		Subjects:    []approvals.RunView{{ProcessView: approvals.ProcessView{Name: "ssh", PID: 7}}},
		Destination: &approvals.DestView{Names: []string{name}}}
	if n := cardNote(&card); !strings.Contains(n.Body, `type "`+name+`" in postern approve`) {
		t.Fatalf("the notification does not name the word whole:\n%s", n.Body)
	}
}
