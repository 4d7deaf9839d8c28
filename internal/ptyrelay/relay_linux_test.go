package ptyrelay

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/postern/postern/internal/ptyrelay/ptytest"
	"github.com/postern/postern/internal/syncbuf"
)

func TestMain(m *testing.M) {
	if os.Getenv("PTYRELAY_TEST_CHILD") != "" {
		fmt.Println(controllingTerminalChild())
		return
	}
	ptytest.DetachTerminal()
	os.Exit(m.Run())
}

// A program started with no standard descriptor a terminal, by a process
// with a controlling terminal, would have that terminal as /dev/tty: it
// gets a relay all the same, input read from the controlling terminal;
// once the process detached its terminal, there is nothing to relay.
func TestRelayControllingTerminal(t *testing.T) {
	master, tty := personTerminal(t)
	readAll(master, false)
	self, _ := os.Executable()
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), "PTYRELAY_TEST_CHILD=1")
	cmd.ExtraFiles = []*os.File{tty}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 3}
	out, err := cmd.Output()
	if got := strings.TrimSpace(string(out)); err != nil || got != "ok" {
		t.Fatalf("%v: %s", err, out)
	}
}

// controllingTerminalChild runs in a process whose controlling terminal
// none of its standard descriptors is.
func controllingTerminalChild() string {
	pr, pw, err := os.Pipe()
	if err != nil {
		return err.Error()
	}
	std := [3]*os.File{pr, pw, pw}
	r, err := Open(std)
	switch {
	case err != nil || r == nil:
		return fmt.Sprintf("no relay for the controlling terminal: %v", err)
	case r.Files(std) != std:
		return "the standard descriptors replaced"
	case r.in == nil || r.out != r.ctty:
		return "the controlling terminal is not relayed"
	}
	r.Close()
	// This process leads its session: giving up the terminal hangs the
	// terminal's foreground group up (itself).
	signal.Ignore(syscall.SIGHUP)
	ptytest.DetachTerminal()
	if r, err := Open(std); r != nil || err != nil {
		return fmt.Sprintf("a relay with no terminal: %v", err)
	}
	return "ok"
}

// personTerminal opens a pseudo-terminal that plays the person's: the
// test types into and reads from its master side; the relay is given its
// other side.
func personTerminal(t *testing.T) (master, tty *os.File) {
	t.Helper()
	master, tty, err := OpenPair()
	if err != nil {
		t.Fatal(err)
	}
	unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 33, Col: 101})
	t.Cleanup(func() { master.Close(); tty.Close() })
	return master, tty
}

// startOn starts sh -c script with the relay's files, the private
// terminal its controlling one.
func startOn(t *testing.T, r *Relay, std [3]*os.File, script string) *exec.Cmd {
	t.Helper()
	files := r.Files(std)
	cmd := exec.Command("sh", "-c", script)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = files[0], files[1], files[2]
	ctty := 0
	for files[ctty] == std[ctty] {
		ctty++
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: ctty}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Start(suspended)
	return cmd
}

// suspended counts the calls of Start's suspend.
var suspended = func() { suspends.Add(1) }
var suspends atomic.Int32

// reader collects what the person's terminal shows.
type reader struct {
	buf  syncbuf.Buffer // read while it is written too
	done chan struct{}
}

// readAll reads the person's terminal until it closes, pausing between
// reads when slow (a terminal that takes its time to show).
func readAll(master *os.File, slow bool) *reader {
	rd := &reader{done: make(chan struct{})}
	go func() {
		defer close(rd.done)
		b := make([]byte, 4096)
		for {
			n, err := master.Read(b)
			rd.buf.Write(b[:n])
			if err != nil {
				return
			}
			if slow {
				time.Sleep(2 * time.Millisecond)
			}
		}
	}()
	return rd
}

func lflag(t *testing.T, f *os.File) uint32 {
	t.Helper()
	tio, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	return tio.Lflag
}

// What the person types reaches the program through its own terminal,
// which has the person's terminal's size; what the program writes comes
// back; the person's terminal is raw while the relay runs, and as it was
// once the relay closed.
func TestRelayBothWays(t *testing.T) {
	master, tty := personTerminal(t)
	before := lflag(t, tty)
	if before&unix.ICANON == 0 {
		t.Fatal("a new terminal is not canonical")
	}
	std := [3]*os.File{tty, tty, tty}
	r, err := Open(std)
	if err != nil || r == nil {
		t.Fatalf("Open: %v, %v", r, err)
	}
	if files := r.Files(std); files[0] == tty || files[1] == tty || files[2] == tty {
		t.Fatal("the program would get the person's terminal")
	}
	cmd := startOn(t, r, std, `stty size; read x; echo "got-$x"; [ -t 0 ] && echo own-terminal`)
	if lflag(t, tty)&unix.ICANON != 0 {
		t.Fatal("the person's terminal is not raw while relayed")
	}
	master.Write([]byte("hello\r"))
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if got := lflag(t, tty); got != before {
		t.Fatalf("the person's terminal modes %#x after, %#x before", got, before)
	}
	tty.Close()
	rd := readAll(master, false)
	<-rd.done
	for _, want := range []string{"33 101", "got-hello", "own-terminal"} {
		if !strings.Contains(rd.buf.String(), want) {
			t.Errorf("the person's terminal shows %q, without %q", rd.buf.String(), want)
		}
	}
}

// Close writes all the program wrote before it ended, however much, and
// however slowly the person's terminal takes it.
func TestRelayCloseWritesEverything(t *testing.T) {
	master, tty := personTerminal(t)
	rd := readAll(master, true)
	std := [3]*os.File{nil, tty, tty}
	r, err := Open(std)
	if err != nil || r == nil {
		t.Fatalf("Open: %v, %v", r, err)
	}
	cmd := startOn(t, r, [3]*os.File{os.Stdin, std[1], std[2]}, `i=0; while [ $i -lt 4000 ]; do echo line-$i-of-the-program-output-padded-to-sixty-four-bytes-xxxx; i=$((i+1)); done`)
	cmd.Wait()
	r.Close()
	time.Sleep(100 * time.Millisecond)
	tty.Close()
	<-rd.done
	if n := strings.Count(rd.buf.String(), "-of-the-program-output"); n != 4000 {
		t.Fatalf("%d of 4000 lines shown", n)
	}
}

// Pause gives the person's terminal back its modes; Continue takes it
// again.
func TestRelayPauseContinue(t *testing.T) {
	master, tty := personTerminal(t)
	readAll(master, false)
	before := lflag(t, tty)
	std := [3]*os.File{tty, tty, tty}
	r, _ := Open(std)
	cmd := startOn(t, r, std, `sleep 5`)
	defer func() { cmd.Process.Kill(); cmd.Wait(); r.Close() }()
	r.Pause()
	if got := lflag(t, tty); got != before {
		t.Fatalf("paused: modes %#x, before %#x", got, before)
	}
	r.Continue()
	if lflag(t, tty)&unix.ICANON != 0 {
		t.Fatal("continued: the terminal is not raw")
	}
}

// With no terminal among the descriptors there is nothing to relay, and
// a nil relay gives the descriptors as they are.
func TestRelayNoTerminal(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	std := [3]*os.File{pr, pw, pw}
	r, err := Open(std)
	if r != nil || err != nil {
		t.Fatalf("Open: %v, %v", r, err)
	}
	if r.Files(std) != std {
		t.Fatal("files changed")
	}
	r.Start(nil)
	r.Pause()
	r.Continue()
	r.Resize()
	r.Signal(syscall.SIGINT)
	r.Close()
}

// Resize gives the run's terminal the person's terminal's new size.
func TestRelayResize(t *testing.T) {
	master, tty := personTerminal(t)
	readAll(master, false)
	std := [3]*os.File{tty, tty, tty}
	r, _ := Open(std)
	cmd := startOn(t, r, std, `sleep 5`)
	defer func() { cmd.Process.Kill(); cmd.Wait(); r.Close() }()
	unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 120})
	r.Resize()
	ws, err := unix.IoctlGetWinsize(r.ptyFD, unix.TIOCGWINSZ)
	if err != nil || ws.Row != 40 || ws.Col != 120 {
		t.Fatalf("the run's terminal is %+v, %v", ws, err)
	}
}

// Signal reaches the program as its terminal's interrupt would: with
// standard input no terminal, the person's Ctrl-C signals the caller.
func TestRelaySignal(t *testing.T) {
	master, tty := personTerminal(t)
	readAll(master, false)
	std := [3]*os.File{os.Stdin, tty, tty}
	r, _ := Open(std)
	cmd := startOn(t, r, std, `exec sleep 30`)
	defer r.Close()
	time.Sleep(100 * time.Millisecond)
	r.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Fatalf("the program ended with %v", err)
	}
}

// A Ctrl-Z typed while the run's terminal turns it into a stop signal is
// told to the caller; one typed while the program reads it as a key (its
// terminal does not signal) is not.
func TestRelaySuspendCharacter(t *testing.T) {
	master, tty := personTerminal(t)
	rd := readAll(master, false)
	std := [3]*os.File{tty, tty, tty}
	r, _ := Open(std)
	// The program answers the first line (stty -isig) before the relay
	// goes on, as it may when the relay's thread waits for a processor:
	// the character was still a stop when it was typed. (Set before the
	// relay starts, which orders it before the relay's reads.)
	var once sync.Once
	answered := make(chan struct{})
	afterTyped = func() {
		once.Do(func() {
			for deadline := time.Now().Add(10 * time.Second); !strings.Contains(rd.buf.String(), "ready") && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			close(answered)
		})
	}
	cmd := startOn(t, r, std, `trap '' TSTP; read x; stty -isig; echo >&2 ready; read y`)
	defer func() { cmd.Process.Kill(); cmd.Wait(); r.Close() }()
	before := suspends.Load()
	master.Write([]byte{'a', 0x1a, 'b', '\r'})
	<-answered
	waitUntil(t, "the suspend character told", func() bool { return suspends.Load() == before+1 })
	// The program's terminal no longer signals now.
	master.Write([]byte{0x1a})
	time.Sleep(100 * time.Millisecond)
	if n := suspends.Load(); n != before+1 {
		t.Fatalf("a Ctrl-Z read as a key was told as a stop (%d)", n-before)
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not in 10s", what)
		}
	}
}
