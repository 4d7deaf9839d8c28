package audit

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const crashChildEnv = "POSTERN_AUDIT_CRASH_CHILD"

// TestCrashChild is the child of TestCrashKill9: it appends from many
// goroutines (half of them with Start and Wait) and prints "seq goroutine
// index" the moment each Append or Wait returns, until it is killed.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		t.Skip("runs only as the child of TestCrashKill9")
	}
	s, err := LoadSetup(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	cfg := s.Config(filepath.Join(dir, "audit.log"))
	cfg.CheckpointEvery = 16 // many key-file rotations for the kill to land in
	l, err := Open(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	for g := 0; g < 16; g++ {
		go func() {
			for i := 0; ; i++ {
				e := Event{Type: EventSign, Run: "G" + strconv.Itoa(g), Detail: map[string]string{"i": strconv.Itoa(i)}}
				var seq uint64
				var err error
				if g%2 == 0 {
					seq, err = l.append(e)
				} else {
					p := l.Start(e)
					seq, err = p.Seq(), p.Wait()
				}
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(3)
				}
				// One write(2) per line: a line in the pipe was durable first.
				os.Stdout.WriteString(fmt.Sprintf("%d G%d %d\n", seq, g, i))
			}
		}()
	}
	time.Sleep(60 * time.Second)
	os.Exit(4)
}

func TestCrashKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	dir := t.TempDir()
	s, err := NewSetup(dir)
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "audit.log")
	var durable map[uint64]string
	// Two crashes in a row: the second one hits a log recovered from the first.
	for round := 0; round < 2; round++ {
		durable = runCrashChild(t, dir, 2000+round*1000)
		r, err := VerifyPath(logPath, VerifyOptions{PK0: s.PK0})
		if err != nil {
			t.Fatal(err)
		}
		if !r.OK {
			t.Fatalf("round %d: log after kill -9 fails: %s", round, describe(r))
		}
		t.Logf("round %d: %d acknowledged appends; log: %d records, %d entries, %d checkpoints, %d unsealed, torn=%v",
			round, len(durable), r.Records, r.Entries, r.Checkpoints, r.UnsealedEntries, r.Torn)
		got := map[uint64]string{}
		_, err = ReadLog(logPath, s.Identity, ReadOptions{VerifyOptions: VerifyOptions{PK0: s.PK0}}, func(e Event) error {
			if e.Type == EventSign {
				got[e.Seq] = e.Run + " " + e.Detail["i"]
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for seq, want := range durable {
			if got[seq] != want {
				t.Fatalf("round %d: seq %d was acknowledged as %q but the log holds %q", round, seq, want, got[seq])
			}
		}
		// Reopening recovers (torn tail, unsealed entries, key file
		// mid-rotation) and continues the chain.
		l, err := Open(s.Config(logPath))
		if err != nil {
			t.Fatalf("round %d: reopen after kill -9: %v", round, err)
		}
		mustAppend(t, l, ev(EventGatewayStarted, ""))
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		r2, err := VerifyPath(logPath, VerifyOptions{PK0: s.PK0})
		if err != nil {
			t.Fatal(err)
		}
		if !r2.OK || r2.Torn != nil || r2.UnsealedEntries != 0 || r2.Entries <= r.Entries {
			t.Fatalf("round %d: after reopen: %s torn=%v unsealed=%d", round, describe(r2), r2.Torn, r2.UnsealedEntries)
		}
	}
}

// runCrashChild starts the child, kills it with SIGKILL once it has
// acknowledged `after` appends, and returns every acknowledged seq.
func runCrashChild(t *testing.T, dir string, after int) map[uint64]string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	kill := func() { once.Do(func() { syscall.Kill(cmd.Process.Pid, syscall.SIGKILL) }) }
	timer := time.AfterFunc(60*time.Second, kill)
	defer timer.Stop()
	durable := map[uint64]string{}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			continue
		}
		seq, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			continue
		}
		durable[seq] = f[1] + " " + f[2]
		if len(durable) >= after {
			kill()
		}
	}
	err = cmd.Wait()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die by SIGKILL (%v): %s", err, stderr.String())
	}
	if len(durable) < after {
		t.Fatalf("child acknowledged only %d appends: %s", len(durable), stderr.String())
	}
	return durable
}
