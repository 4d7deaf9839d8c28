package e2e

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A gateway out of descriptors cannot check the process behind a request:
// it refuses the request and says why, as a failure (exit 1), never as a
// process that changed (a denial, exit 254), which would tell the person
// something false about the program they approve. The soft descriptor
// limit of a running gateway is set to leave it 11 descriptors free, then
// 10, and so on to none (or as few as a hole in its descriptors' numbers
// leaves), so that each step runs it out at another point of a "postern
// run" (identifying the caller, pinning it; at the last, with no
// descriptor free below the limit, accepting); then the limit is put back
// and the gateway serves as before. At every step a client is answered at
// once, never left waiting for a descriptor: a gateway that cannot accept
// spends the one it holds in reserve to let the client in and refuse it
// (without it, postern run waits out its 30 s and ssh-add its 90 s here,
// for ever elsewhere).
func TestOutOfDescriptorsIsNotAChangedProcess(t *testing.T) {
	need(t, "prlimit", "ssh-add", "ssh-keygen")
	e := newEnv(t)
	e.Config(`approval = "none"`)
	a := e.StartAgent()
	e.AddKey(e.Keygen("id", "ed25519", 0, ""))
	e.MustRun("postern", "run", "--no-sandbox", "--", "true")
	limitFor, soft := fdLimits(t, e, a.PID())
	defer soft(1024)
	var refused []string
	for k := 11; k >= 0; k-- {
		soft(limitFor(k))
		at := fmt.Sprintf("with %d descriptors free", k)
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

// fdLimits returns limitFor, which gives the soft descriptor limit that
// leaves the process pid k descriptors free, and soft, which sets that
// process's soft descriptor limit (prlimit(1)). The limit bounds
// descriptors' numbers, not how many are held, and a new descriptor
// takes the lowest number free: limitFor waits until the process's
// descriptors stay the same for 100 ms (those of the last request come
// and go), and returns one more than the highest held, plus k. A gateway
// may hold one above a hole (a descriptor closed below it), which leaves
// it that many more free; a limit at or below a descriptor held would
// make closing it free a number the process cannot use, as closing the
// one the gateway holds in reserve must not.
func fdLimits(t *testing.T, e *Env, pid int) (limitFor func(k int) int, soft func(n int)) {
	t.Helper()
	p := strconv.Itoa(pid)
	held := func() []int {
		t.Helper()
		fds, err := os.ReadDir("/proc/" + p + "/fd")
		if err != nil {
			t.Fatal(err)
		}
		nums := make([]int, len(fds))
		for i, fd := range fds {
			nums[i], _ = strconv.Atoi(fd.Name())
		}
		return nums
	}
	return func(k int) int {
			t.Helper()
			was, since := held(), time.Now()
			for deadline := since.Add(10 * time.Second); time.Since(since) < 100*time.Millisecond; time.Sleep(10 * time.Millisecond) {
				if now := held(); !slices.Equal(now, was) {
					was, since = now, time.Now()
				}
				if time.Now().After(deadline) {
					t.Fatalf("the gateway's descriptors did not settle in 10s: %v", was)
				}
			}
			return slices.Max(was) + 1 + k
		}, func(n int) {
			t.Helper()
			e.MustRun("prlimit", "--pid", p, "--nofile="+strconv.Itoa(n)+":")
		}
}
