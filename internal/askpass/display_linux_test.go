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

// A Wayland session names its display with $WAYLAND_DISPLAY, a socket in
// $XDG_RUNTIME_DIR, and may set no $DISPLAY: as ssh does, askpass asks
// there, and a Wayland display that does not answer is no display.
func TestWaylandDisplayIsADisplay(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "askpass")
	os.WriteFile(prog, []byte("#!/bin/sh\nexit 0\n"), 0o755)
	run := filepath.Join(dir, "run")
	os.Mkdir(run, 0o700)
	l, err := net.Listen("unix", filepath.Join(run, "wayland-9"))
	if err != nil {
		t.Fatal(err)
	}
	// A connection waits in the backlog: no one need accept it.
	env := Env{"SSH_ASKPASS=" + prog, "WAYLAND_DISPLAY=wayland-9", "XDG_RUNTIME_DIR=" + run}
	p := Pin(env, nil)
	if err := p.Available(); err != nil {
		t.Errorf("askpass with $WAYLAND_DISPLAY alone, whose compositor answers: %v", err)
	}
	if ok, err := p.Confirm(context.Background(), "Allow?"); !ok || err != nil {
		t.Errorf("asked on Wayland display wayland-9, which answers: %v, %v; want yes", ok, err)
	}

	l.Close()
	p = Pin(env, nil)
	if err := p.Available(); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "$WAYLAND_DISPLAY wayland-9") {
		t.Errorf("askpass on Wayland display wayland-9, where nothing listens: available (%v), want unavailable naming it", err)
	}
}
