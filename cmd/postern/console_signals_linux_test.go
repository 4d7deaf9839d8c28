package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/postern/postern/internal/ptyrelay"
)

// consoleTerm is the full-screen console (this binary, as postern) on a
// terminal of its own: the pty's peer is its controlling terminal, and
// what it writes is gathered from the master.
type consoleTerm struct {
	master, tty *os.File
	cmd         *exec.Cmd
	mu          sync.Mutex
	out         bytes.Buffer
	eof         chan struct{}
}

func startConsoleOnPty(t *testing.T) *consoleTerm {
	t.Helper()
	master, tty, err := ptyrelay.OpenPair()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { master.Close(); tty.Close() })
	if err := unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 80}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command("postern", "approve", "--socket", filepath.Join(dir, "agent.sock"))
	cmd.Env = []string{"HOME=" + dir, "XDG_RUNTIME_DIR=" + dir, "XDG_CONFIG_HOME=" + dir, "XDG_STATE_HOME=" + dir,
		"TERM=xterm-256color", "PATH=" + os.Getenv("PATH")}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	// No controlling terminal: this binary gives one up as it starts
	// (TestMain), which would hang it up.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &consoleTerm{master: master, tty: tty, cmd: cmd, eof: make(chan struct{})}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	go func() {
		defer close(c.eof)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			c.mu.Lock()
			c.out.Write(buf[:n])
			c.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return c
}

// waitFor waits until the console wrote s, or fails.
func (c *consoleTerm) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c.mu.Lock()
		got := c.out.String()
		c.mu.Unlock()
		if strings.Contains(got, s) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the console never wrote %q; it wrote %q", s, got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cooked reports whether the terminal echoes and reads lines: what a
// shell's prompt finds after a program restored the terminal.
func (c *consoleTerm) cooked(t *testing.T) bool {
	t.Helper()
	tio, err := unix.IoctlGetTermios(int(c.tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	return tio.Lflag&unix.ECHO != 0 && tio.Lflag&unix.ICANON != 0
}

// The full-screen console gives the terminal back as it found it (line
// mode, echo, the main screen) whichever signal ends it: Ctrl-C's
// SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGABRT, which any program of the
// person's may send it.
func TestConsoleRestoresTheTerminalOnSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGABRT} {
		t.Run(unix.SignalName(sig), func(t *testing.T) {
			c := startConsoleOnPty(t)
			c.waitFor(t, "no pending cards")
			if c.cooked(t) {
				t.Fatal("the console runs with the terminal in line mode")
			}
			if err := c.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- c.cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("the console did not end on %v", sig)
			}
			if !c.cooked(t) {
				c.mu.Lock()
				tail := c.out.String()
				c.mu.Unlock()
				t.Fatalf("after %v the terminal was left raw (no echo, no lines); the console last wrote %q", sig, tail[max(len(tail)-80, 0):])
			}
		})
	}
}
