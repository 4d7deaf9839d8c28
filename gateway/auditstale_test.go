package gateway

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/postern/postern/audit"
)

// failAuditLog makes the gateway's log al, at logPath, fail: another
// process writes into the free space after the records, and the writer
// refuses the next record.
func failAuditLog(t *testing.T, al *auditLog, logPath string) {
	t.Helper()
	rep, err := audit.VerifyPath(logPath, audit.VerifyOptions{})
	if err != nil || !rep.OK {
		t.Fatalf("%+v, %v", rep, err)
	}
	f, err := os.OpenFile(logPath, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{1, 2, 3}, rep.Bytes)
	f.Close()
	if err := al.Append(audit.Event{Type: audit.EventSign, Run: "R1"}); err == nil {
		t.Fatal("append over foreign bytes succeeded")
	}
}

// An append that took the log before it failed, and whose error comes
// back once the gateway has opened it again, is refused for itself: it
// does not mark the log opened again as failing, which would close it,
// refuse every action for another retry pause, and say in status that
// the log cannot be written.
func TestStaleFailureDoesNotFailTheReopenedLog(t *testing.T) {
	first := auditRetryFirst
	auditRetryFirst = 10 * time.Millisecond
	t.Cleanup(func() { auditRetryFirst = first })
	var vaultPath string
	g, _ := startGatewayWith(t, func(string) { vaultPath = initTestVault(t, []byte("stale pass")) })
	logPath := filepath.Join(filepath.Dir(vaultPath), "audit.log")
	al := g.currentAudit()
	old := al.current()

	failAuditLog(t, al, logPath)
	for deadline := time.Now().Add(20 * time.Second); al.current() == nil || al.current() == old || al.status().Failing != ""; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the log was not opened again: %+v", al.status())
		}
	}
	reopened := al.current()

	// The late answer of an append to the failed log.
	e := audit.Event{Type: audit.EventSign, Run: "R2"}
	if err := al.recorded(old, e, old.Append(e)); err == nil {
		t.Fatal("append to the closed log succeeded")
	}
	time.Sleep(100 * time.Millisecond) // a retry would have begun
	if st := al.status(); st.Failing != "" || al.current() != reopened {
		t.Fatalf("after a late error of the failed log, the log opened again was taken for failing, closed and opened once more: %+v", st)
	}
	if err := al.Append(audit.Event{Type: audit.EventSign, Run: "R3"}); err != nil {
		t.Fatal(err)
	}
}
