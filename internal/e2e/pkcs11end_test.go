package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/postern/postern/internal/procid"
)

// The ssh-pkcs11-helper that holds a token's login goes with the last of
// the token's keys (ssh-add -D here), as with OpenSSH's agent.
func TestPKCS11HelperEndsWithTheTokensKeys(t *testing.T) {
	need(t, "ssh-add")
	e := newEnv(t)
	tokenNoCards(t, e)
	a := e.StartAgent()
	helpers := func() int { return len(childrenNamed(a.cmd.Process.Pid, "ssh-pkcs11-help")) }
	e.MustRun("ssh-add", "-s", softhsm)
	if n := helpers(); n != 1 {
		t.Fatalf("%d ssh-pkcs11-helper running for the gateway with the token's keys loaded, want 1", n)
	}
	e.MustRun("ssh-add", "-D")
	for deadline := time.Now().Add(20 * time.Second); helpers() != 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("ssh-pkcs11-helper still runs, logged in to the token, 20s after ssh-add -D removed its keys\nagent log:\n%s", a.Log())
		}
	}
}

// childrenNamed returns the pids of pid's live children whose command
// name (as /proc cuts it, 15 bytes) is comm.
func childrenNamed(pid int, comm string) []int {
	var out []int
	for child, st := range processes() {
		if st.State != 'Z' && st.PPID == pid && st.Comm == comm {
			out = append(out, child)
		}
	}
	return out
}

// processes reads the machine's process table (/proc/PID/stat), by pid.
func processes() map[int]procid.Stat {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	procs := map[int]procid.Stat{}
	for _, s := range stats {
		b, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		if st, err := procid.ParseStat(b); err == nil {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(s)))
			procs[pid] = st
		}
	}
	return procs
}
