package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/postern/postern/internal/confine"
)

// A person who stops a run (Ctrl-Z) and sees the shell say so is back at
// the shell with nothing of the run going on. A stop reaches a process
// in a system call only once the call returns, and a write the disk
// holds up (fsync) can take a while: the run is reported stopped once
// each of its processes is, so the shell says so no sooner (but for a
// call still under way after confine.StopWait).
func TestStoppedRunIsStoppedWhenTheShellSaysSo(t *testing.T) {
	sh, _ := startAtShell(t, `postern run -- sh -c "trap '' TSTP; touch started; w() { while :; do dd if=/dev/zero of=\$1 bs=1M count=64 conv=fsync status=none; done; }; w one & w two"`)
	pane, err := strconv.Atoi(strings.TrimSpace(sh.run("display-message", "-p", "#{pane_pid}").Stdout))
	if err != nil {
		t.Fatalf("the shell's pid: %v", err)
	}
	for i := 1; i <= 3; i++ {
		asked := time.Now()
		sh.keys("C-z")
		sh.waitFor("the job stopped", func() bool { return strings.Count(sh.screen(), "Stopped") == i })
		switch p := unstopped(pane); {
		case len(p) != 0 && time.Since(asked) < confine.StopWait:
			t.Fatalf("stop %d: the shell says the run stopped; of the run, these go on: %s", i, strings.Join(p, ", "))
		case len(p) != 0:
			t.Logf("stop %d: said after %v, the wait's bound, with these not yet stopped: %s", i, time.Since(asked), strings.Join(p, ", "))
		}
		sh.keys("fg", "Enter")
		sh.waitFor("the run going on", func() bool { return len(unstopped(pane)) != 0 })
		time.Sleep(200 * time.Millisecond)
	}
	sh.prompted("the run interrupted", "C-c")
}

// unstopped lists, each as "pid comm state", the processes of the run
// started at the shell pane (its processes are those under the run's
// helper: pane, postern run, the helper, then the run's) that are
// neither stopped nor ended.
func unstopped(pane int) []string {
	procs := processes()
	var out []string
	for pid, st := range procs {
		depth, p := 0, pid
		for ; p > 1 && p != pane && depth < 64; p = procs[p].PPID {
			depth++
		}
		if p == pane && depth >= 3 && !strings.ContainsRune("TtZX", rune(st.State)) {
			out = append(out, fmt.Sprintf("%d %s %c", pid, st.Comm, st.State))
		}
	}
	return out
}
