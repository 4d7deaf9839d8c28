package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// "postern why" inside a run, through the run's own socket: the AI agent
// whose ssh was refused learns why, while its card waits and after.
func TestWhyInsideARun(t *testing.T) {
	w := newApprovalWorld(t, "")
	run := w.e.StartRun("coder")
	job := run.Start(sshCmd(w.sshd))
	c := w.e.WaitCard()

	r := run.Do("postern why --json")
	var res struct {
		Run  string
		Last *struct {
			Outcome, Card, Run, Next string
		}
	}
	if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil || res.Last == nil {
		t.Fatalf("why while the card waits: %v\n%s", err, r)
	}
	if res.Last.Outcome != "WAITING "+c.ID || res.Run == "" || res.Last.Run != res.Run {
		t.Fatalf("why while the card waits: %s", r.Stdout)
	}
	w.e.MustRun("postern", "deny", c.ID)
	if job.Wait().Code == 0 {
		t.Fatal("ssh succeeded after the denial")
	}
	r = run.Do("postern why")
	if !strings.HasPrefix(r.Stdout, "DENIED denied\n") || !strings.Contains(r.Stdout, "Do not retry") || !strings.Contains(r.Stdout, "run:         "+res.Run) {
		t.Fatalf("why after the denial:\n%s", r)
	}
	// The test process is the run's parent: outside the run, through the
	// main socket, it learns of its descendant's denial too.
	if out := w.e.MustRun("postern", "why").Stdout; !strings.HasPrefix(out, "DENIED denied\n") {
		t.Fatalf("why from the run's parent:\n%s", out)
	}
}

// postern why names the destination of a refused login as its card did,
// by the host inventory's name and class: the run refused a production
// login learns which host, not a fingerprint alone.
func TestWhyNamesTheHostOfARefusedLogin(t *testing.T) {
	w, prod, _, run := productionWorld(t)
	job := run.Start(sshCmd(prod, "-o", "HostKeyAlias=prod-db-1"))
	w.e.MustRun("postern", "deny", w.e.WaitCard().ID)
	if job.Wait().Code == 0 {
		t.Fatal("ssh succeeded after the denial")
	}
	r := run.Do("postern why")
	if !strings.Contains(r.Stdout, "\n  destination: host key SHA256:") || !strings.Contains(r.Stdout, "prod-db-1 (production)") {
		t.Fatalf("why after a refused login to prod-db-1:\n%s", r)
	}
}

// postern why says which rule refused a login the policy denies, in the
// words postern check gives: the run learns it is the policy's answer
// and its person which rule to read.
func TestWhySaysWhichRuleDenied(t *testing.T) {
	w, prod, config, run := productionWorld(t)
	w.agent.Reconfigure(t, config+"[[rule]]\nhost = \"prod-db-*\"\napproval = \"deny\"\n")
	if run.Do(sshCmd(prod, "-o", "HostKeyAlias=prod-db-1")).Code == 0 {
		t.Fatal("ssh to prod-db-1 succeeded under a deny rule")
	}
	want := "  because:     rule 2: host \"prod-db-*\" (approval = \"deny\")\n"
	r := run.Do("postern why")
	if !strings.HasPrefix(r.Stdout, "DENIED policy_deny\n") || !strings.Contains(r.Stdout, want) {
		t.Fatalf("why after a login the policy denies, want %q:\n%s", want, r)
	}
	if check := w.e.MustRun("postern", "check", "--host", "prod-db-1").Stdout; !strings.HasPrefix(check, "deny, because "+strings.TrimSpace(strings.TrimPrefix(want, "  because:"))) {
		t.Fatalf("postern check says otherwise: %s", check)
	}
}
