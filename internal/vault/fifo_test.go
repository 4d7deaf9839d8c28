//go:build linux || darwin

package vault

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestFIFOAtPath: a FIFO planted at the vault path is refused at once
// instead of blocking the reader.
func TestFIFOAtPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vault")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal("mkfifo:", err)
	}
	done := make(chan error, 2)
	go func() { _, err := Open(path, testPass); done <- err }()
	go func() { _, _, err := ReadMeta(path); done <- err }()
	for range 2 {
		select {
		case err := <-done:
			if err == nil {
				t.Fatal("FIFO accepted")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("blocked on a FIFO")
		}
	}
}
