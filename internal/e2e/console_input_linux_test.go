package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestLineConsoleWaitsForInputInThePoller: the line console reads its
// answers from its standard input, a pipe it inherited in blocking mode,
// and waits for them in the Go runtime's poller, never in read(2) on that
// descriptor. A thread blocked there keeps its processor from the poller
// for up to 10 ms after the console answers a card, and the next card on
// the gateway's stream waited that long (internal/waitread).
func TestLineConsoleWaitsForInputInThePoller(t *testing.T) {
	e := newEnv(t)
	e.Config("approval = \"per-call\"\n")
	e.StartAgent()
	key := e.Keygen("k", "ed25519", 0, "")
	e.AddKey(key)
	c := e.StartConsole()
	pid := c.cmd.Process.Pid

	// A card answered through the console's input, as in a benchmark
	// round: the input's goroutine has read an answer and waits again.
	sign := e.Command("ssh-keygen", "-Y", "sign", "-n", "file", "-f", key+".pub", e.WriteFile("data", "x", 0o600))
	if err := sign.Start(); err != nil {
		t.Fatal(err)
	}
	card := e.WaitCard()
	fmt.Fprintf(c.in, "deny %s\n", card.ID)
	if sign.Wait() == nil {
		t.Fatal("signed after a deny")
	}
	waitFor(t, func() bool { return strings.Contains(c.Output(), card.ID+": denied") })

	// Once every thread of the console waits in a system call, none waits
	// in read(2) on descriptor 0.
	var waits map[string]string
	waitFor(t, func() bool {
		waits = threadSyscalls(t, pid)
		for _, s := range waits {
			if s == "running" {
				return false
			}
		}
		return true
	})
	read := strconv.Itoa(unix.SYS_READ) + " 0x0 "
	for tid, s := range waits {
		if strings.HasPrefix(s, read) {
			t.Fatalf("thread %s of the console waits in read(2) on its standard input: %s\nall: %v", tid, s, waits)
		}
	}
}

// threadSyscalls returns, for each thread of process pid, the system call
// it waits in (/proc/PID/task/TID/syscall: its number and arguments), or
// "running".
func threadSyscalls(t *testing.T, pid int) map[string]string {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tids, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, tid := range tids {
		b, err := os.ReadFile(filepath.Join(dir, tid.Name(), "syscall"))
		if err != nil {
			continue // the thread ended
		}
		out[tid.Name()] = strings.TrimSpace(string(b))
	}
	return out
}
