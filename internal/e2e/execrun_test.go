package e2e

// An exec on an approved run's pid: a new process, which its approval
// does not cover.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// execOnApprovedRun starts a run, approves it for a session, and has
// its process execute a copy of its program, on the same pid.
func execOnApprovedRun(t *testing.T) (*approvalWorld, *Driver) {
	t.Helper()
	w := newApprovalWorld(t, "")
	a := w.e.StartRun("coder")
	job := a.Start(sshCmd(w.sshd))
	w.approve(w.e.WaitCard().ID, "--session")
	mustSucceed(t, "before the exec", job.Wait())
	self, _ := os.Executable()
	cp := w.e.Path("driver-copy")
	if out, err := exec.Command("cp", self, cp).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	pid := a.SelfPID()
	a.Exec(cp)
	if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", a.PID())); exe != cp {
		t.Fatalf("the run's process executes %s after the exec, want %s", exe, cp)
	}
	if a.SelfPID() != pid {
		t.Fatal("the exec changed the pid")
	}
	return w, a
}

// 6. An exec on the approved pid, a forwarded connection, an approver
// launched from inside the run, an unanswered card: each is refused.
func TestExecOnApprovedRunIsRefused(t *testing.T) {
	w, a := execOnApprovedRun(t)
	if r := a.Do(sshCmd(w.sshd)); r.Code == 0 {
		t.Fatal("an exec'd run kept its approval")
	}
	w.agent.WaitLog(t, "reason=process_changed")
}

// An exec on an approved run that asks nothing more: the person's
// sessions list shows neither the run nor its grant, and the run ends
// as changed (process_changed), not later as exited.
func TestExecOnApprovedRunEndsItInSessions(t *testing.T) {
	w, _ := execOnApprovedRun(t)
	var sess struct {
		Runs   []struct{ ID string } `json:"runs"`
		Grants []struct{ ID string } `json:"grants"`
	}
	out := w.e.MustRun("postern", "sessions", "--json").Stdout
	if err := json.Unmarshal([]byte(out), &sess); err != nil || len(sess.Runs) != 0 || len(sess.Grants) != 0 {
		t.Fatalf("sessions after the run's process executed another program: %v %s", err, out)
	}
	w.agent.WaitLog(t, "reason=process_changed")
}
