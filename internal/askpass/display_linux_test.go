package askpass

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/postern/postern/internal/notify/notifytest"
)

// An askpass program asked on a display that does not answer (the X
// server of a desktop session that ended, which the gateway's
// environment still names) cannot show its dialog and exits non-zero,
// as a Cancel does: that was taken for the person's no, and denied every
// card at once, the one a console showed too. No dialog is asked for
// there: askpass is not reachable, and says why; on a display that
// answers, the dialog is asked for.
func TestDisplayThatDoesNotAnswerIsNoDialog(t *testing.T) {
	if _, err := exec.LookPath("xdpyinfo"); err != nil {
		t.Fatalf("xdpyinfo is not installed (Debian package x11-utils; .ci/run installs it): %v", err)
	}
	dir := t.TempDir()
	// A dialog: it opens the display, or exits 1 as when cancelled.
	prog := filepath.Join(dir, "askpass")
	os.WriteFile(prog, []byte("#!/bin/sh\nxdpyinfo >/dev/null 2>&1 || exit 1\n"), 0o755)

	gone := ""
	for n := 4711; gone == ""; n++ {
		sock := "/tmp/.X11-unix/X" + strconv.Itoa(n)
		if _, err := os.Stat(sock); err == nil {
			continue
		}
		if c, err := net.Dial("unix", "@"+sock); err == nil {
			c.Close()
			continue
		}
		gone = ":" + strconv.Itoa(n)
	}
	p := Pin(Env{"SSH_ASKPASS=" + prog, "DISPLAY=" + gone}, nil)
	if err := p.Available(); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), gone) {
		t.Errorf("askpass on display %s, where no X server listens: available (%v), want unavailable naming the display", gone, err)
	}
	if ok, err := p.Confirm(context.Background(), "Allow?"); ok || err == nil {
		t.Errorf("asked on display %s, where no X server listens: %v, %v; want no answer (an error), not a no", gone, ok, err)
	}

	up := ":" + notifytest.Xvfb(t, "-nolisten", "tcp")
	p = Pin(Env{"SSH_ASKPASS=" + prog, "DISPLAY=" + up}, nil)
	if err := p.Available(); err != nil {
		t.Errorf("askpass on display %s, which answers: %v", up, err)
	}
	if ok, err := p.Confirm(context.Background(), "Allow?"); !ok || err != nil {
		t.Errorf("asked on display %s, which answers: %v, %v; want yes", up, ok, err)
	}
}
