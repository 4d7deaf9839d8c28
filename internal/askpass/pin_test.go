package askpass

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The program that answers is the one that was hashed: a program with
// the person's uid that puts another in its place between the check and
// the run (here, exactly between them) is not run.
func TestPinnedRunsWhatWasHashed(t *testing.T) {
	prog, log := stub(t, "", 1) // says no
	yes := filepath.Join(filepath.Dir(prog), "yes")
	os.WriteFile(yes, []byte("#!/bin/sh\necho swapped >> "+log+"\nexit 0\n"), 0o755)
	p := Pin(Env{"SSH_ASKPASS=" + prog, "SSH_ASKPASS_REQUIRE=force"}, nil)
	swapped := false
	beforeRun = func() {
		if !swapped {
			swapped = true
			if err := os.Rename(yes, prog); err != nil {
				t.Error(err)
			}
		}
	}
	defer func() { beforeRun = func() {} }()
	ok, err := p.Confirm(context.Background(), "Allow?")
	if !swapped {
		t.Fatal("the program was not swapped")
	}
	if ok {
		t.Fatal("the program put in place after the check answered yes")
	}
	b, _ := os.ReadFile(log)
	if string(b) != "confirm|Allow?\n" {
		t.Errorf("ran %q, want the pinned program's answer only (err %v)", b, err)
	}
	// The next question finds the program changed.
	if _, err := p.Confirm(context.Background(), "Allow?"); !errors.Is(err, ErrChanged) {
		t.Errorf("after the swap: %v, want %v", err, ErrChanged)
	}
}

// A FIFO, a directory or a device where the program was is an error at
// once: neither the pin at gateway start nor a question waits on it.
func TestPinnedProgramThatIsNoFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o700); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		p := Pin(Env{"SSH_ASKPASS=" + fifo, "SSH_ASKPASS_REQUIRE=force"}, nil)
		if _, _, why := p.Status(); !strings.Contains(why, "not a regular file") {
			t.Errorf("pinned a FIFO: why %q", why)
		}
		prog, _ := stub(t, "", 0)
		p = Pin(Env{"SSH_ASKPASS=" + prog, "SSH_ASKPASS_REQUIRE=force"}, nil)
		if err := os.Remove(prog); err != nil {
			t.Error(err)
		}
		if err := syscall.Mkfifo(prog, 0o700); err != nil {
			t.Error(err)
		}
		if ok, err := p.Confirm(context.Background(), "Allow?"); ok || !errors.Is(err, ErrChanged) {
			t.Errorf("a FIFO in the program's place: %v %v", ok, err)
		}
		if _, _, why := p.Status(); why == "" {
			t.Error("status does not say why askpass is off")
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("waited on a FIFO in the askpass program's place")
	}
}

// A compiled program runs from its copy as a script does.
func TestPinnedProgramThatIsABinary(t *testing.T) {
	for prog, want := range map[string]bool{"/bin/true": true, "/bin/false": false} {
		p := Pin(Env{"SSH_ASKPASS=" + prog, "SSH_ASKPASS_REQUIRE=force"}, nil)
		if ok, err := p.Confirm(context.Background(), "Allow?"); ok != want || err != nil {
			t.Errorf("%s: %v %v, want %v", prog, ok, err, want)
		}
	}
}
