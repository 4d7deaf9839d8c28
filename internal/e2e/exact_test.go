package e2e

// Scopes and answers exact, end to end.

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// With session_scope = "destination", a session approved for a commit
// signature (no destination) covers no login.
func TestSignatureSessionCoversNoLogin(t *testing.T) {
	w := newApprovalWorld(t, "session_scope = \"destination\"\n")
	e := w.e
	a := e.StartRun("coder")
	msg := e.WriteFile("commit", "a commit\n", 0o644)
	sign := fmt.Sprintf("ssh-keygen -Y sign -n git -f %s.pub %s", w.key, msg)
	job := a.Start(sign)
	c := e.WaitCard()
	w.approve(c.ID, "--session")
	mustSucceed(t, "the commit signature", job.Wait())
	mustSucceed(t, "a second signature in the session", a.Do("rm -f "+msg+".sig && "+sign))
	e.NoCard()
	before := w.accepted()
	job = a.Start(sshCmd(w.sshd))
	c = e.WaitCard()
	if c.Destination == nil || c.Mode != "session" {
		t.Fatalf("the login's card: %+v", c)
	}
	time.Sleep(300 * time.Millisecond)
	if job.Done() || w.accepted() != before {
		t.Fatal("a session approved for a signature covered a login")
	}
	e.MustRun("postern", "deny", c.ID)
	if r := job.Wait(); r.Code == 0 {
		t.Fatal("the login signed after a deny")
	}
}

// Eight logins wait on one session card; a "once" answer signs exactly
// the request it was shown for: one login of eight.
func TestOnceSignsOneRequest(t *testing.T) {
	w := newApprovalWorld(t, "")
	e := w.e
	a := e.StartRun("coder")
	var jobs []*Job
	for i := 0; i < 8; i++ {
		jobs = append(jobs, a.Start(sshCmd(w.sshd)))
	}
	c := e.WaitCard()
	time.Sleep(time.Second) // the others join the card
	w.approve(c.ID, "--once")
	// Every other login is asked again: deny each card until all ended.
	deadline := time.Now().Add(60 * time.Second)
	for {
		done := 0
		for _, j := range jobs {
			if j.Done() {
				done++
			}
		}
		if done == len(jobs) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("logins still waiting")
		}
		for _, c := range e.cards() {
			e.Run("postern", "deny", c.ID)
		}
		time.Sleep(50 * time.Millisecond)
	}
	ok := 0
	for _, j := range jobs {
		if j.Wait().Code == 0 {
			ok++
		}
	}
	if ok != 1 || w.accepted() != 1 {
		t.Fatalf("one once answer: %d logins succeeded, %d accepted; want 1", ok, w.accepted())
	}
}

// An approver nested 70 processes deep inside the run, in a terminal
// session of its own (setsid), is still inside the run: refused. The run
// is unconfined, so that the process tree is what refuses it (a confined
// run cannot reach the control socket at all).
func TestDeeplyNestedApproverIsRefused(t *testing.T) {
	need(t, "setsid")
	w := newApprovalWorld(t, "")
	e := w.e
	a := e.StartRunWith("coder", "--no-sandbox")
	job := a.Start(sshCmd(w.sshd))
	c := e.WaitCard()
	// Each level is a child (a shell that goes on after its child, so it
	// cannot exec it); the last approves from a new terminal session.
	nest := e.WriteFile("nest.sh", fmt.Sprintf(`if [ "$1" -gt 0 ]; then sh "$0" $(($1 - 1)); st=$?; exit $st; fi
setsid -w postern approve %s --once --socket %s
`, c.ID, w.agent.Socket), 0o755)
	nested := "sh " + nest + " 70"
	r := a.Do(nested)
	if r.Code != 254 || !strings.Contains(r.Stdout, "refused") {
		t.Fatalf("an approval from 70 processes deep inside the run: %s", r)
	}
	if job.Done() {
		t.Fatal("the run approved its own card")
	}
	w.approve(c.ID, "--once")
	mustSucceed(t, "approved from outside", job.Wait())
}

// With session_scope = "destination", a session approved for git's commit
// signatures (git commit -S, gpg.format = ssh) covers signatures in
// namespace "git" only: ssh-keygen -Y sign -n file in the same run shows
// a card naming "file", and signs nothing once it is denied.
func TestCommitSignatureSessionCoversNoOtherNamespace(t *testing.T) {
	need(t, "git")
	w := newApprovalWorld(t, "session_scope = \"destination\"\n")
	e := w.e
	a := e.StartRun("coder")
	repo := e.Path("repo")
	commit := fmt.Sprintf("git -C %s -c user.name=coder -c user.email=coder@example.org -c gpg.format=ssh -c user.signingkey=%s.pub commit -q --allow-empty -S -m work", repo, w.key)
	mustSucceed(t, "git init", a.Do("git init -q "+repo))
	job := a.Start(commit)
	c := e.WaitCard()
	if c.Namespace != "git" {
		t.Fatalf("the commit signature's card: %+v", c)
	}
	w.approve(c.ID, "--session")
	mustSucceed(t, "the signed commit", job.Wait())
	mustSucceed(t, "a second signed commit in the session", a.Do(commit))
	e.NoCard()
	msg := e.WriteFile("release", "a release\n", 0o644)
	job = a.Start(fmt.Sprintf("ssh-keygen -Y sign -n file -f %s.pub %s", w.key, msg))
	c = e.WaitCard()
	if c.Namespace != "file" {
		t.Fatalf("a signature in namespace \"file\" under a session for \"git\": card %+v (signed: %v)", c, job.Done())
	}
	e.MustRun("postern", "deny", c.ID)
	if r := job.Wait(); r.Code == 0 {
		t.Fatal("signed in namespace \"file\" after a deny")
	}
}
