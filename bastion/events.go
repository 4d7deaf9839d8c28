package bastion

import (
	"github.com/postern/postern/audit"
	"github.com/postern/postern/bastion/journal"
)

// A Recorder makes audit events durable (approvals.Engine.Record).
type Recorder interface {
	Record(audit.Event) error
}

// record appends a command event (audit.EventCommand…) to the audit log,
// when there is one. Each names its journal entry.
func (ss *session) record(typ audit.EventType, e *journal.Entry, extra map[string]string) error {
	return ss.s.recordEntry(typ, e, extra)
}

func (s *Server) recordEntry(typ audit.EventType, e *journal.Entry, extra map[string]string) error {
	if s.cfg.Audit == nil {
		return nil
	}
	detail := map[string]string{
		"entry": e.ID, "target": e.Target.String(), "kind": e.Kind, "command": e.CommandText(),
		"command_sha256": e.CommandSHA256, "approval": e.Approval,
	}
	if e.RetryOf != "" {
		detail["retry_of"] = e.RetryOf
	}
	for k, v := range extra {
		detail[k] = v
	}
	return s.cfg.Audit.Record(audit.Event{Type: typ, Dest: e.Target.HostKey, Run: e.Run, Detail: detail})
}

// RecordRestarted records in the audit log the unknown outcome
// (command_unknown, bastion_restarted) of each command an earlier
// bastion left running, which the journal's Open turned unknown: the
// log's account of such a command, started, has its end, as for every
// other unknown outcome.
func (s *Server) RecordRestarted() {
	for _, e := range s.cfg.Journal.Restarted() {
		if err := s.recordEntry(audit.EventCommandUnknown, e, map[string]string{"reason": journal.ReasonBastionRestarted}); err != nil {
			s.cfg.Log.Error("bastion: cannot record in the audit log the unknown outcome of a command an earlier gateway left running", "entry", e.ID, "err", err)
		}
	}
}
