package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// auditEvent is an event as postern audit show --json prints it.
type auditEvent struct {
	Type   string            `json:"type"`
	Detail map[string]string `json:"detail"`
}

// auditEvents reads the audit log with postern audit show --json.
func (b *bastionWorld) auditEvents() []auditEvent {
	t := b.e.t
	t.Helper()
	var evs []auditEvent
	for _, line := range strings.Split(strings.TrimSpace(b.e.MustRun("postern", "audit", "show", "--json", "--passphrase-file", b.pass).Stdout), "\n") {
		var ev auditEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("audit show --json: %v: %s", err, line)
		}
		evs = append(evs, ev)
	}
	return evs
}

// A command whose gateway was killed while it ran is unknown in the
// journal (bastion_restarted) and in the audit log too: the next
// gateway records command_unknown for it, so that the log's account of
// the command, started, has its end, as for every other unknown outcome.
func TestBastionKilledMidCommandIsUnknownInTheAuditLog(t *testing.T) {
	b := newBastionWorld(t, "")
	_, e := b.killMidCommand(filepath.Join(b.sshd.Dir, "runs"))
	var started, unknown int
	for _, ev := range b.auditEvents() {
		if ev.Detail["entry"] != e.ID {
			continue
		}
		switch ev.Type {
		case "command_started":
			started++
		case "command_unknown":
			if ev.Detail["reason"] == "bastion_restarted" {
				unknown++
			}
		}
	}
	if started != 1 || unknown != 1 {
		t.Fatalf("the audit log has %d command_started and %d command_unknown (bastion_restarted) events for entry %s, which the journal shows unknown", started, unknown, e.ID)
	}
}
