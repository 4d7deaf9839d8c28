package e2e

// A changed program is a new process: an exec on the approved pid ends
// its session, even under the same interpreter.

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cardSubjects is what a test reads of a card's subjects.
type cardSubjects struct {
	ID       string `json:"id"`
	Reason   string `json:"reason"`
	Changed  string `json:"what_changed"`
	Subjects []struct {
		PID  int    `json:"pid"`
		Name string `json:"name"`
	} `json:"subjects"`
}

func (e *Env) waitCardSubjects() cardSubjects {
	e.t.Helper()
	id := e.WaitCard().ID
	var cs []cardSubjects
	json.Unmarshal([]byte(e.MustRun("postern", "approve", "--list", "--json").Stdout), &cs)
	for _, c := range cs {
		if c.ID == id {
			return c
		}
	}
	e.t.Fatalf("card %s went away", id)
	return cardSubjects{}
}

// A bash script is approved for a session and logs in twice; then it runs
// "exec -a x ./other.sh": the same pid, start time and executable
// (/bin/bash), another program. Its login is asked about again
// (REAUTH_REQUIRED process_changed), and the grant ended.
func TestExecUnderTheSameInterpreterIsANewProcess(t *testing.T) {
	w := newApprovalWorld(t, "")
	e := w.e
	login := sshCmd(w.sshd)
	other := e.WriteFile("other.sh", fmt.Sprintf("#!/bin/bash\necho $$ > %s\n%s\necho $? > %s\n", e.Path("pid2"), login, e.Path("rc3")), 0o755)
	first := e.WriteFile("first.sh", fmt.Sprintf(`#!/bin/bash
echo $$ > %[1]s
%[2]s
echo $? > %[3]s
%[2]s
echo $? > %[4]s
while [ ! -e %[5]s ]; do sleep 0.05; done
exec -a x %[6]s
`, e.Path("pid1"), login, e.Path("rc1"), e.Path("rc2"), e.Path("go"), other), 0o755)
	cmd := e.Command("/bin/bash", first)
	cmd.SysProcAttr.Setsid = true // the approver is in another session
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// The file is created before the pid is written into it: wait for
	// the pid.
	var bashPID int
	waitFor(t, func() bool {
		b, _ := os.ReadFile(e.Path("pid1"))
		bashPID, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return bashPID > 0
	})

	c := e.waitCardSubjects()
	subject := -1
	for i, s := range c.Subjects {
		if s.PID == bashPID {
			subject = i
		}
	}
	if subject < 0 {
		t.Fatalf("the script (pid %d) is not a subject of %+v", bashPID, c)
	}
	w.approve(c.ID, "--session", "--subject", strconv.Itoa(subject))
	readRC := func(name string) string {
		waitFor(t, func() bool { _, err := os.Stat(e.Path(name)); return err == nil })
		time.Sleep(20 * time.Millisecond)
		return strings.TrimSpace(string(mustRead(t, e.Path(name))))
	}
	if rc := readRC("rc1"); rc != "0" {
		t.Fatalf("the approved login: exit %s", rc)
	}
	if rc := readRC("rc2"); rc != "0" {
		t.Fatalf("the second login in the session: exit %s", rc)
	}
	e.NoCard()
	before := w.accepted()

	e.WriteFile("go", "", 0o600)
	c = e.waitCardSubjects()
	if pid, _ := strconv.Atoi(readRC("pid2")); pid != bashPID {
		t.Fatalf("other.sh runs as pid %d, not %d", pid, bashPID)
	}
	if c.Reason != "REAUTH_REQUIRED process_changed" || !strings.Contains(c.Changed, "executed another program") {
		t.Fatalf("the card after the exec: %+v", c)
	}
	time.Sleep(300 * time.Millisecond)
	if w.accepted() != before {
		t.Fatal("the new program logged in before the answer")
	}
	e.MustRun("postern", "deny", c.ID)
	if rc := readRC("rc3"); rc == "0" {
		t.Fatal("the new program rode the grant")
	}
	w.agent.WaitLog(t, "reason=process_changed")
}
