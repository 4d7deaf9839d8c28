package gateway

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A program that makes more file events than the kernel queues (16384 by
// default) while the gateway is busy loses the events that follow, a
// person's edit of the configuration among them. The gateway cannot know
// what it missed: it reads the file again.
func TestReloadAfterLostEvents(t *testing.T) {
	g, cfg := sessionGateway(t)
	queued := 16384
	if b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			queued = n
		}
	}
	// The watcher busy: a reload that waits for the gateway. Twice the
	// kernel's queue, since the watcher's reader holds some events too.
	g.mu.Lock()
	os.WriteFile(cfg, []byte("approval = \"per-call\"\n"), 0o600)
	time.Sleep(300 * time.Millisecond)
	for i := range 2 * queued {
		f, err := os.Create(filepath.Join(filepath.Dir(cfg), "f"+strconv.Itoa(i)))
		if err != nil {
			g.mu.Unlock()
			t.Fatal(err)
		}
		f.Close()
	}
	// The person's edit: its event is lost.
	os.WriteFile(cfg, []byte("approval = \"deny\"\n"), 0o600)
	g.mu.Unlock()
	waitStatus(t, g, "the edit after the lost events", approvalIs("deny"))
}
