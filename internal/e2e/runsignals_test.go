package e2e

// Signals postern run was started ignoring, as nohup and a script's
// background jobs start it, are not its to catch and pass on.

import (
	"bufio"
	"strings"
	"syscall"
	"testing"
)

// Under nohup, SIGHUP (the terminal hanging up) does not end the run's
// command, confined or not: postern run leaves it ignored, as the
// command inherits it, where it caught it and passed it on.
func TestRunUnderNohupOutlivesAHangup(t *testing.T) {
	w := newConfinedWorld(t, "")
	for _, mode := range [][]string{nil, {"--no-sandbox"}} {
		args := append(append([]string{posternBin, "run"}, mode...), "--", "sh", "-c", `trap 'echo alive; exit 0' USR1; echo ready; while :; do sleep 0.05; done`)
		cmd := w.e.Command("nohup", args...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(out)
		if !lines.Scan() || lines.Text() != "ready" {
			cmd.Process.Kill()
			t.Fatalf("%v: %q, %s", mode, lines.Text(), stderr.String())
		}
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
