package audit

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestFullDisk fills a real, small tmpfs. Segments are made ahead of time,
// so the disk runs full while the next segment is being made: the append
// that needs it fails, and every append before it is in the log.
func TestFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test runs as root (as CI runs the tests): it mounts a tmpfs")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	s, err := NewSetup(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.Config(dir + "/audit.log")
	cfg.CheckpointEvery = -1
	cfg.CheckpointInterval = -1
	cfg.SegmentSize = minSegmentSize
	l, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var appended int
	for appended = 0; appended < 10000; appended++ {
		err = l.Append(Event{Type: EventSign, Run: "R1", Detail: map[string]string{"pad": strings.Repeat("x", 600)}})
		if err != nil {
			break
		}
	}
	if err == nil {
		t.Fatal("never ran out of space")
	}
	if !errors.Is(err, ErrNotRecorded) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("full disk: %v", err)
	}
	t.Logf("after %d appends: %v", appended, err)
	if err := l.Append(ev(EventSign, "R2")); !errors.Is(err, ErrNotRecorded) {
		t.Fatalf("append after full disk: %v", err)
	}
	l.Close()
	r, err := VerifyPath(cfg.Path, VerifyOptions{PK0: s.PK0})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK || int(r.Entries) != appended {
		t.Fatalf("after full disk: %s entries=%d appended=%d torn=%v", describe(r), r.Entries, appended, r.Torn)
	}
}
