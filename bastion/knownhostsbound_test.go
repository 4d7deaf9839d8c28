package bastion

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/postern/postern/internal/knownhosts"
)

// A known_hosts file larger than any real one (a program of the user's
// can write one) is refused with an error that names it, before the
// bastion reads it: read whole, and its lines split, it cost every
// connection through the bastion memory for each of its lines, a GiB
// for 64 MiB of empty lines.
func TestAKnownHostsFileTooLargeIsRefused(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(small, []byte("other.example ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB1cqUP8dKPtmUKvePxIUgW0Bn0yIPb7M6MJiNiaMLv+\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "known_hosts2")
	if err := os.WriteFile(big, bytes.Repeat([]byte("\n"), knownhosts.MaxFile+1), 0o600); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err := hostKeyCheck([]string{small, big}, Target{User: "deploy", Host: "prod.example", Port: 22}, nil)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), big) || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a known_hosts file of %d bytes: %v, want an error that names it", knownhosts.MaxFile+1, err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
		t.Errorf("refusing a known_hosts file of %d MiB allocated %d MiB", knownhosts.MaxFile>>20, got>>20)
	}
}

// A known_hosts file that is not a regular file (a FIFO, which would
// hold the bastion's read of it, and the connection, until someone wrote
// to it) is refused with an error that names it.
func TestAKnownHostsFIFOIsRefused(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "known_hosts")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := hostKeyCheck([]string{fifo}, Target{User: "deploy", Host: "prod.example", Port: 22}, nil)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), fifo) || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("a FIFO for known_hosts: %v, want an error that names it", err)
		}
	case <-time.After(10 * time.Second):
		os.WriteFile(fifo, nil, 0o600) // lets the read end
		t.Fatal("the bastion still reads a FIFO for known_hosts after 10 s")
	}
}
