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
// "postern run" (identifying the caller, pinning it; at the last, with
// no descriptor free below the limit, accepting); then the limit is put
// back and the gateway serves as before. At every step a client is
// answered at once, never left waiting for a descriptor: a gateway that
// cannot accept spends the one it holds in reserve to let the client in
// and refuse it (without it, postern run waits out its 30 s and ssh-add
// its 90 s here, for ever elsewhere).
func TestOutOfDescriptorsIsNotAChangedProcess(t *testing.T) {
	need(t, "prlimit", "ssh-add", "ssh-keygen")
	e := newEnv(t)
	e.Config(`approval = "none"`)
	a := e.StartAgent()
	e.AddKey(e.Keygen("id", "ed25519", 0, ""))
	e.MustRun("postern", "run", "--no-sandbox", "--", "true")
	held, soft := softFiles(t, e, a.PID())
	defer soft(1024)
	var refused []string
	for k := 11; k >= 0; k-- {
		soft(held + k)
		at := fmt.Sprintf("with %d descriptors more than the gateway held", k)
		r := e.Run("postern", "run", "--no-sandbox", "--", "true")
		say := fmt.Sprintf("%s: %s", at, r)
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
			t.Log(say)
			refused = append(refused, say)
		}
		r = e.Run("ssh-add", "-l")
		if r.Code != 0 {
			t.Logf("ssh-add -l, %s: %s", at, r)
		}
		if r.Code != 0 && !strings.Contains(r.Stderr, "agent refused operation") {
			t.Errorf("ssh-add -l fails otherwise than by the agent's refusal, %s: %s", at, r)
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
