package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// A gateway out of descriptors cannot check the process behind a
// request: it refuses the request and says why, as a failure (exit 1),
// never as a process that changed (a denial, exit 254), which would tell
// the person something false about the program they approve. The soft
// descriptor limit of a running gateway is set just above what it holds,
// step by step, so that each step runs it out at another point of a
// "postern run" (accepting, identifying the caller, pinning it); then
// the limit is put back and the gateway serves as before.
func TestOutOfDescriptorsIsNotAChangedProcess(t *testing.T) {
	need(t, "prlimit")
	e := newEnv(t)
	e.Config(`approval = "none"`)
	a := e.StartAgent()
	e.MustRun("postern", "run", "--no-sandbox", "--", "true")
	held, soft := softFiles(t, e, a.PID())
	defer soft(1024)
	var refused []string
	for k := range 12 {
		soft(held + k)
		r := e.Run("postern", "run", "--no-sandbox", "--", "true")
		say := fmt.Sprintf("with %d descriptors more than the gateway held: %s", k, r)
		if r.Code == 254 || strings.Contains(r.Stderr, "changed") {
			t.Errorf("a gateway out of descriptors says the caller changed, %s", say)
		}
		if r.Code != 0 {
			if !strings.Contains(r.Stderr, "out of descriptors or memory") {
				t.Errorf("a refusal does not say the gateway is out of descriptors, %s", say)
			}
			if !strings.Contains(r.Stderr, "postern: hint: nothing was decided: try again once the gateway has descriptors free") {
				t.Errorf("a refusal for want of descriptors gives no hint of what to do, %s", say)
			}
			refused = append(refused, say)
		}
	}
	if len(refused) == 0 {
		t.Fatalf("no postern run was refused: the gateway never ran out of descriptors")
	}
	soft(1024)
	e.MustRun("postern", "run", "--no-sandbox", "--", "true")
	select {
	case <-a.done:
		t.Fatalf("the gateway exited:\n%s", tail(a.Log(), 3000))
	default:
	}
}

// softFiles returns how many descriptors the process pid holds, and
// soft, which sets its soft descriptor limit (prlimit(1)).
func softFiles(t *testing.T, e *Env, pid int) (held int, soft func(n int)) {
	t.Helper()
	p := strconv.Itoa(pid)
	fds, err := os.ReadDir("/proc/" + p + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(fds), func(n int) {
		t.Helper()
		e.MustRun("prlimit", "--pid", p, "--nofile="+strconv.Itoa(n)+":")
	}
}
