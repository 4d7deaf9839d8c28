package confine

import (
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// A path listed to be hidden (a socket of the person's, its directory)
// that is gone by the time its mount is made has nothing left to hide:
// the run starts, where it failed with "hiding PATH: no such file or
// directory" when a socket's program ended as a run started. A mount that
// fails on a path that is there, or for another reason, still fails.
func TestHidingAPathGoneMeanwhileIsNotAnError(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "agent.sock")
	for _, isDir := range []bool{false, true} {
		if err := hide(missing, isDir); err != nil {
			t.Errorf("hiding %s (a directory: %v), gone: %v", missing, isDir, err)
		}
	}
	if gone(dir, unix.ENOENT) {
		t.Errorf("%s is there, but a mount on it that failed with ENOENT is taken for one on a path gone", dir)
	}
	if gone(missing, unix.EPERM) {
		t.Error("a mount refused (EPERM) is taken for one on a path gone")
	}
}
