package approvals

import (
	"testing"

	"github.com/postern/postern/audit"
)

// A policy change a person denies is recorded as denied, by whom, apart
// from one never answered: the log held its policy_change_pending and
// nothing after it, as if the card were still up.
func TestPolicyChangeDeniedIsRecorded(t *testing.T) {
	w := newWorld(t)
	log := &eventLog{}
	w.e.SetAudit(log)
	applied := false
	id := w.e.ProposePolicy([]string{"approval: session → none"}, func() error { applied = true; return nil })
	w.answer(id, VerdictDeny, 30)
	if applied {
		t.Fatal("a denied change was applied")
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	var types []audit.EventType
	for _, ev := range log.events {
		types = append(types, ev.Type)
		if ev.Type == audit.EventPolicyChangeDenied {
			if ev.Card != id || ev.Reason != audit.ReasonDenied || ev.Approver != "test" {
				t.Fatalf("the denial is recorded as %+v", ev)
			}
			return
		}
	}
	t.Fatalf("a denied policy change is not recorded: events %v", types)
}
