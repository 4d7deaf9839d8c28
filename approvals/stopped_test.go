package approvals

import (
	"bytes"
	"os"
	"testing"

	"github.com/postern/postern/audit"
)

// Stop writes the display context the next gateway reads, and it is the
// last write: a run that ends, a grant revoked or an epoch change after
// it (a watcher that fires while the gateway stops) leaves the file as
// Stop wrote it, where it was written again after the gateway had let
// its state directory go, over what a gateway started since had written.
func TestNothingWritesTheContextFileAfterStop(t *testing.T) {
	w := newWorld(t)
	run := w.launch("coder", 10)
	w.e.Stop()
	before, err := os.ReadFile(w.cfg.ContextFile)
	if err != nil {
		t.Fatal(err)
	}
	w.e.EndRun(run.ID, audit.ReasonProcessExited)
	w.e.EpochChanged(true)
	w.e.RevokeAll()
	after, err := os.ReadFile(w.cfg.ContextFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatalf("the display context was written after Stop: %d bytes at Stop, %d after", len(before), len(after))
	}
}
