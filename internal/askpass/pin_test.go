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
