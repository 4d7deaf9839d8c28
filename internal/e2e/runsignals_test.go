package e2e

// Signals postern run was started ignoring, as nohup and a script's
// background jobs start it, are not its to catch and pass on.

import (
	"bufio"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Under nohup, SIGHUP (the terminal hanging up) does not end the run's
// command, confined or not: postern run leaves it ignored, as the
// command inherits it, where it caught it and passed it on.
func TestRunUnderNohupOutlivesAHangup(t *testing.T) {
	w := newConfinedWorld(t, "")
	for _, mode := range [][]string{nil, {"--no-sandbox"}} {
		args := append(append([]string{posternBin, "run"}, mode...), "--", "sh", "-c", `trap 'echo alive; exit 0' USR1; echo ready; while :; do sleep 0.05; done`)
		cmd := w.e.Command("nohup", args...)
		lines, stderr := startReady(t, cmd)
		// Pending at once, SIGHUP is taken first (the lower number).
		cmd.Process.Signal(syscall.SIGHUP)
		cmd.Process.Signal(syscall.SIGUSR1)
		said := ""
		for lines.Scan() {
			said += lines.Text() + "\n"
		}
		if err := cmd.Wait(); err != nil || said != "alive\n" {
			t.Errorf("postern run %v under nohup, after SIGHUP: %v, said %q, stderr %s", mode, err, said, stderr.String())
		}
	}
}

// postern run killed (SIGKILL, the OOM killer) takes its confined run
// with it: the helper, whose starter is gone, ends the run, and the
// gateway records its end and stops serving its socket, where the run
// lived on, served, with nothing left to report its end or pass it a
// signal.
func TestKilledRunEndsWithIt(t *testing.T) {
	w := newConfinedWorld(t, "")
	cmd := w.e.Command(posternBin, "run", "--", "sh", "-c", `echo "$SSH_AUTH_SOCK"; while :; do sleep 0.05; done`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// A file, not a pipe: a run left alive holds it open.
	stderr, err := os.Create(w.e.Path("run.stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		cmd.Process.Kill()
		t.Fatalf("postern run said nothing: %s", mustRead(t, stderr.Name()))
	}
	sock := lines.Text()
	var sess struct {
		Runs []struct {
			ID  string `json:"id"`
			PID int    `json:"pid"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(w.e.MustRun("postern", "sessions", "--json").Stdout), &sess); err != nil || len(sess.Runs) != 1 {
		cmd.Process.Kill()
		t.Fatalf("sessions before the kill: %v %+v", err, sess)
	}
	// Whatever happens, the run's program goes with the test.
	// Held by a pidfd (os.FindProcess): by the test's end the number may
	// be another process's.
	if p, err := os.FindProcess(sess.Runs[0].PID); err == nil {
		t.Cleanup(func() { p.Kill() })
	}
	cmd.Process.Kill()
	cmd.Wait()
	w.agent.WaitLog(t, "reason=process_exited")
	if _, err := os.Stat(sock); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the killed run's socket %s: %v", sock, err)
	}
	if err := json.Unmarshal([]byte(w.e.MustRun("postern", "sessions", "--json").Stdout), &sess); err != nil || len(sess.Runs) != 0 {
		t.Errorf("sessions after postern run was killed: %v %+v", err, sess)
	}
}

// A SIGINT or SIGQUIT sent to postern run alone, with no terminal that
// could have sent it to the command too (a harness that stops its run
// with kill -INT), reaches the command, confined or not, where postern
// run swallowed it and the harness waited for ever.
func TestInterruptSentToPosternRunAloneReachesTheCommand(t *testing.T) {
	w := newConfinedWorld(t, "")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGQUIT} {
		for _, mode := range [][]string{nil, {"--no-sandbox"}} {
			args := append(append([]string{"run"}, mode...), "--", "sh", "-c", `trap 'echo got it; exit 7' INT QUIT; echo ready; while :; do sleep 0.05; done`)
			cmd := w.e.Command(posternBin, args...)
			// No controlling terminal, as under a harness.
			cmd.SysProcAttr.Setsid = true
			lines, stderr := startReady(t, cmd)
			cmd.Process.Signal(sig)
			done := make(chan string, 1)
			go func() {
				said := ""
				for lines.Scan() {
					said += lines.Text() + "\n"
				}
				done <- said
			}()
			var said string
			select {
			case said = <-done:
			case <-time.After(30 * time.Second):
				// Everything the run started, in the session it leads.
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				said = <-done
			}
			err := cmd.Wait()
			var ee *exec.ExitError
			if said != "got it\n" || !errors.As(err, &ee) || ee.ExitCode() != 7 {
				t.Errorf("postern run %v sent %v alone: %v, the command said %q, stderr %s", mode, sig, err, said, stderr.String())
			}
		}
	}
}

// startReady starts cmd and waits for the first line of its output,
// which must be "ready"; it returns the lines that follow and what it
// writes to standard error.
func startReady(t *testing.T, cmd *exec.Cmd) (*bufio.Scanner, *strings.Builder) {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := new(strings.Builder)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "ready" {
		cmd.Process.Kill()
		t.Fatalf("%q: %q, %s", cmd.Args, lines.Text(), stderr.String())
	}
	return lines, stderr
}
