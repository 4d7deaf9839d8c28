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

// Why no askpass program can be used names what is missing, not what
// is there: a program $SSH_ASKPASS names that is not found is named,
// with the error; a missing display is said to be one, to a person who
// set $SSH_ASKPASS.
func TestUnavailableSaysWhy(t *testing.T) {
	prog, _ := stub(t, "", 0)
	cases := []struct {
		env  Env
		want []string
		not  string
	}{
		{Env{"SSH_ASKPASS=/nonexistent/askpass", "DISPLAY=:0"}, []string{"/nonexistent/askpass", "no such file"}, "set SSH_ASKPASS"},
		{Env{"SSH_ASKPASS=no-such-askpass-on-path", "DISPLAY=:0"}, []string{"no-such-askpass-on-path", "not found"}, "set SSH_ASKPASS"},
		{Env{"SSH_ASKPASS=" + prog}, []string{"$DISPLAY", "SSH_ASKPASS_REQUIRE=force"}, "set SSH_ASKPASS"},
		{Env{"DISPLAY=:0"}, []string{"$SSH_ASKPASS is not set"}, "\x00"},
		{Env{"SSH_ASKPASS=" + prog, "DISPLAY=:0", "SSH_ASKPASS_REQUIRE=never"}, []string{"SSH_ASKPASS_REQUIRE=never"}, "set SSH_ASKPASS"},
	}
	for _, c := range cases {
		err := Pin(c.env, nil).Available()
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("%q: %v, want ErrUnavailable", c.env, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: %q does not say %q", c.env, err, w)
			}
		}
		if strings.Contains(err.Error(), c.not) {
			t.Errorf("%q: %q says %q", c.env, err, c.not)
		}
		if _, _, why := Pin(c.env, nil).Status(); why != "" {
			t.Errorf("%q: status says askpass approvals are off (%q), as of a program that changed", c.env, why)
		}
	}
}

// A relative $SSH_ASKPASS with a slash is found from the gateway's
// working directory, and pinned and shown as the absolute path it is:
// doctor, run elsewhere, judges the file the gateway runs.
func TestRelativeProgramIsPinnedAbsolute(t *testing.T) {
	prog, _ := stub(t, "", 0)
	t.Chdir(filepath.Dir(filepath.Dir(prog)))
	rel := filepath.Join(".", filepath.Base(filepath.Dir(prog)), filepath.Base(prog))
	p := Pin(Env{"SSH_ASKPASS=" + rel, "SSH_ASKPASS_REQUIRE=force"}, nil)
	if path, _, why := p.Status(); path != prog || why != "" {
		t.Fatalf("$SSH_ASKPASS=%s pinned as %q (%s), want %q", rel, path, why, prog)
	}
}
