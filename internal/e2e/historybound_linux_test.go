package e2e

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A read of the history whose reader stops taking events (a pager left
// open) holds the batches it has in flight in the gateway for as long as
// it stays connected: a program of the user's that started such reads,
// one a control connection, held hundreds of MiB. At most eight are
// open at once; the next is refused with an error that says why, and
// once one ends, a read is served again.
func TestPausedHistoryReadsAreBounded(t *testing.T) {
	mostlyWaits(t)
	need(t, "bash")
	const events = 20000 // more than the pipe and the sockets hold
	e := unlockedWithSigns(t, events)
	var paused []*exec.Cmd
	defer func() {
		for _, c := range paused {
			c.Process.Kill()
			c.Wait()
		}
	}()
	// Each prints to a pipe of its own that nobody reads: once it has
	// printed, it has its events from the gateway, and its read stays
	// open there, paused, for the rest are more than the pipe holds.
	var unread []*os.File
	for range 8 {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		c := e.Command("postern", "activity")
		c.Stdout = w
		err = c.Start()
		w.Close()
		if err != nil {
			t.Fatal(err)
		}
		paused, unread = append(paused, c), append(unread, r)
	}
	for i, r := range unread {
		for deadline := time.Now().Add(time.Minute); ; sleep10ms() {
			if n, err := unix.IoctlGetInt(int(r.Fd()), unix.TIOCINQ); err == nil && n > 0 { // FIONREAD
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("paused reader %d printed nothing in a minute", i)
			}
		}
	}
	r := e.Run("postern", "activity")
	if r.Code != 1 || !strings.Contains(r.Stderr, "8 reads of the audit log are open in the gateway") {
		t.Fatalf("a read with eight paused: want exit 1 and the bound named, got %s", r)
	}
	paused[0].Process.Kill()
	paused[0].Wait()
	paused = paused[1:]
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		r = e.Run("bash", "-c", `set -o pipefail; postern activity | grep -c ' sign run=R1 '`)
		if r.Code == 0 || time.Now().After(deadline) {
			break
		}
	}
	if r.Code != 0 || strings.TrimSpace(r.Stdout) != strconv.Itoa(events) {
		t.Fatalf("a read once a paused one ended: %s", r)
	}
}
