package e2e

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The vault epoch a full disk kept from its file is written once space
// is back: status stops saying it could not be, and the gateway started
// next counts on from it, so that no epoch repeats in the audit log.
func TestFullDiskEpochResumes(t *testing.T) {
	w := newFullDisk(t)
	e := w.e
	e.MustRun("postern", "lock")
	w.fill()
	e.MustRun("postern", "unlock", "--passphrase-file", w.pass)
	epochOf := func(out string) uint64 {
		t.Helper()
		m := regexp.MustCompile(`epoch (\d+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no epoch in:\n%s", out)
		}
		n, _ := strconv.ParseUint(m[1], 10, 64)
		return n
	}
	st := e.MustRun("postern", "status").Stdout
	if !strings.Contains(st, "epoch file:") {
		t.Fatalf("status on a full disk says nothing of the epoch file:\n%s", st)
	}
	before := epochOf(st)
	w.free()
	for i := 0; ; i++ {
		if st = e.MustRun("postern", "status").Stdout; !strings.Contains(st, "epoch file:") {
			break
		}
		if i == 1000 {
			t.Fatalf("the epoch file is not written once space is back:\n%s", st)
		}
		sleep10ms()
	}
	if got := strings.TrimSpace(string(mustRead(t, w.state+"/postern/epoch"))); got != strconv.FormatUint(before, 10) {
		t.Fatalf("the epoch file holds %s, the gateway's epoch is %d", got, before)
	}
	w.agent.Stop()
	w.agent = e.StartAgent()
	after := epochOf(e.MustRun("postern", "unlock", "--passphrase-file", w.pass).Stdout)
	if after <= before {
		t.Fatalf("the gateway started after a full disk counts epoch %d again (the last was %d)", after, before)
	}
}
