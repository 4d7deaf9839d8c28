package bastion

import (
	"github.com/postern/postern/audit"
	"github.com/postern/postern/bastion/journal"
)

// Audit events of the bastion. Each names its journal entry.
const (
	EventCommandStarted  = "command_started"
	EventCommandEnded    = "command_ended"
	EventCommandUnknown  = "command_unknown"
	EventCommandResolved = "command_resolved"
)

// A Recorder makes audit events durable (approvals.Engine.Record).
type Recorder interface {
	Record(audit.Event) error
}

// record appends a command event to the audit log, when there is one.
func (ss *session) record(typ string, e *journal.Entry, extra map[string]string) error {
	return ss.s.recordEntry(typ, e, extra)
}

func (s *Server) recordEntry(typ string, e *journal.Entry, extra map[string]string) error {
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
