package bastion

import (
	"strings"
	"testing"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/bastion/journal"
)

// A decision that did not allow for want of what the gateway needs to
// decide (descriptors or memory to check the requester, the audit log,
// the journal) refused nothing: the command could not be started, as
// when the host cannot be reached. It ends with status 255 and is
// journaled failed_to_start, never as denied with the 254 of a policy's
// or a person's refusal, which a script takes for a final answer.
func TestDecisionThatCouldNotBeMadeIsNotADenial(t *testing.T) {
	for _, reason := range []audit.Reason{audit.ReasonOutOfResources, audit.ReasonAuditFailed, audit.ReasonJournalFailed} {
		t.Run(string(reason), func(t *testing.T) {
			w := newWorld(t)
			w.decider.setDeny(func(*approvals.Request) audit.Reason { return reason })
			_, errOut, err := w.run("make deploy", nil)
			if status := exitStatus(t, err); status != ExitUnreachable || strings.Contains(errOut, "denied") {
				t.Fatalf("a decision that could not be made (%s): exit %d, stderr %q", reason, status, errOut)
			}
			if e := w.only(); e.Status() != journal.StatusRetrySafe || e.End.Outcome != journal.OutcomeFailedToStart {
				t.Fatalf("journal: %s %+v", e.Status(), e.End)
			}
		})
	}
}
