package bastion

import (
	"fmt"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/bastion/journal"
)

// changes are the journal's changes a command's life writes after its
// start: the journal itself (Config.Journal), or in tests one whose
// writes fail, as on a full disk.
type changes interface {
	Dispatched(id string) (*journal.Entry, error)
	End(id string, end journal.End) (*journal.Entry, error)
	MarkUnknown(id string, u journal.Unknown) (*journal.Entry, error)
}

// notSent journals that e ended without being sent (denied, failed to
// start, rejected by the host), and returns what the client is told
// besides: nothing, or, when the journal cannot record it (a full disk),
// that its entry, written at the start, reads RUNNING. The failure is
// logged; the audit log has the decision, and, for a command it recorded
// as started, its end (command_ended).
func (ss *session) notSent(e *journal.Entry, end journal.End) string {
	_, err := ss.s.changes.End(e.ID, end)
	ss.journaled()
	if ss.audited {
		ss.record(audit.EventCommandEnded, e, map[string]string{"outcome": end.Outcome, "error": end.ErrorMsg})
	}
	if err != nil {
		ss.s.cfg.Log.Error("bastion: cannot journal that a command was not sent; its entry reads RUNNING, and unknown once the gateway restarts", "entry", e.ID, "outcome", end.Outcome, "err", err)
		return fmt.Sprintf("; the journal could not record that (%v): entry %s reads RUNNING, and unknown once the gateway restarts", err, e.ID)
	}
	return ""
}

// dispatched journals that the host accepted e's request. When the
// journal cannot, the command runs on, the failure is logged, and the
// mark is tried again before an unknown outcome is recorded, whose last
// phase says whether the host had the request.
func (ss *session) dispatched(e *journal.Entry) {
	if _, err := ss.s.changes.Dispatched(e.ID); err != nil {
		ss.s.cfg.Log.Error("bastion: cannot journal that the host accepted a command (its dispatch); it runs", "entry", e.ID, "err", err)
		ss.undispatched = true
		return
	}
	ss.undispatched = false
}
