package bastion

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh/knownhosts"
	"golang.org/x/sys/unix"

	hostnames "github.com/postern/postern/internal/knownhosts"
	"github.com/postern/postern/internal/smallfile"
	"github.com/postern/postern/internal/swaptest"
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
	if err := os.WriteFile(big, bytes.Repeat([]byte("\n"), hostnames.MaxFile+1), 0o600); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err := hostKeyCheck([]string{small, big}, Target{User: "deploy", Host: "prod.example", Port: 22}, nil)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), big) || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a known_hosts file of %d bytes: %v, want an error that names it", hostnames.MaxFile+1, err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
		t.Errorf("refusing a known_hosts file of %d MiB allocated %d MiB", hostnames.MaxFile>>20, got>>20)
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

// A program of the user's can replace a known_hosts file while the
// bastion reads it: a FIFO put there after the file was read and found
// regular would hold a second read of it, and the connection, for ever.
// Each file is opened once, and what was read there is what is checked.
func TestAKnownHostsFileSwappedForAFIFOHoldsNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "known_hosts")
	line := []byte("prod.example ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB1cqUP8dKPtmUKvePxIUgW0Bn0yIPb7M6MJiNiaMLv+\n")
	swaptest.Race(t, path, line, time.Second, func() error {
		_, algos, err := hostKeyCheck([]string{path}, Target{User: "deploy", Host: "prod.example", Port: 22}, nil)
		if err == nil && len(algos) == 0 {
			err = errors.New("no key algorithm for the host")
		}
		return err
	}, func(err error) bool { return errors.Is(err, smallfile.ErrNotRegular) })
}

// A known_hosts line knownhosts cannot read is an error that names the
// file and the line, as the person knows the file (the bastion hands
// knownhosts what it read under another name).
func TestAKnownHostsErrorNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "known_hosts")
	bad := filepath.Join(dir, "known_hosts2")
	if err := os.WriteFile(good, []byte("prod.example ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB1cqUP8dKPtmUKvePxIUgW0Bn0yIPb7M6MJiNiaMLv+\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("# a comment\nprod.example ssh-ed25519 not*base64\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := hostKeyCheck([]string{good, bad}, Target{User: "deploy", Host: "prod.example", Port: 22}, nil)
	if err == nil || !strings.Contains(err.Error(), bad+":") || !strings.Contains(err.Error(), "line 2") || strings.Contains(err.Error(), "/fd/") {
		t.Errorf("a known_hosts file with a line that is no key: %v, want an error that names %s and its line 2", err, bad)
	}
}

// Where no memfd can be made (and off Linux), knownhosts is handed a
// file's contents through a pipe: all of them, past the pipe's buffer.
func TestAPipeHandsOverAWholeFile(t *testing.T) {
	var b bytes.Buffer
	var last string
	for i := 0; b.Len() < 256<<10; i++ {
		last = fmt.Sprintf("host%d.example", i)
		fmt.Fprintf(&b, "%s ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB1cqUP8dKPtmUKvePxIUgW0Bn0yIPb7M6MJiNiaMLv+\n", last)
	}
	f, err := pipeHandOver(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	check, err := knownhosts.New(descriptorName(f))
	if err != nil {
		t.Fatal(err)
	}
	var ke *knownhosts.KeyError
	if err := check(last+":22", &net.TCPAddr{}, probeKey); !errors.As(err, &ke) || len(ke.Want) != 1 {
		t.Errorf("the last host of %d bytes handed over through a pipe: %v, want its key known", b.Len(), err)
	}
}
