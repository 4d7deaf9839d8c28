package askpass

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// eachImage runs test with each way of running what was checked: a
// sealed copy, and the file as opened where no copy may be executed.
func eachImage(t *testing.T, test func(t *testing.T)) {
	t.Run("copy", test)
	t.Run("as-opened", func(t *testing.T) {
		made := newImage
		newImage = func() (*os.File, error) { return nil, errImageNotExecutable }
		defer func() { newImage = made }()
		test(t)
	})
}

// The program that answers is the one that was hashed: a program with
// the person's uid that puts another in its place between the check and
// the run (here, exactly between them) is not run.
func TestPinnedRunsWhatWasHashed(t *testing.T) {
	eachImage(t, pinnedRunsWhatWasHashed)
}

func pinnedRunsWhatWasHashed(t *testing.T) {
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

// A compiled program runs from what was checked as a script does.
func TestPinnedProgramThatIsABinary(t *testing.T) {
	eachImage(t, pinnedProgramThatIsABinary)
}

func pinnedProgramThatIsABinary(t *testing.T) {
	for prog, want := range map[string]bool{"/bin/true": true, "/bin/false": false} {
		p := Pin(Env{"SSH_ASKPASS=" + prog, "SSH_ASKPASS_REQUIRE=force"}, nil)
		if ok, err := p.Confirm(context.Background(), "Allow?"); ok != want || err != nil {
			t.Errorf("%s: %v %v, want %v", prog, ok, err, want)
		}
	}
}
