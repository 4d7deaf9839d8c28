package e2e

import (
	"bufio"
	"fmt"
	"strings"
	"testing"
	"time"
)

// A session answer to a per-call card approves the one call, and the
// person who gave it is told so: postern approve --session, and a
// "session" line read by the piped console, echo "approved once", never
// "approved for the run", and the next login to the production host asks
// again.
func TestSessionAnswerToAPerCallCardSaysItApprovedOnce(t *testing.T) {
	w := newApprovalWorld(t, "", "git-host")
	prodSSHD := startSSHD(t, pubKey(t, w.key)+"\n", "prod-db-1")
	w.agent.Reconfigure(t, fmt.Sprintf("known_hosts = [%q, %q]\n[[rule]]\nclass = \"production\"\napproval = \"per-call\"\n", w.sshd.KnownHosts, prodSSHD.KnownHosts))
	w.e.MustRun("postern", "hosts", "import", "prod-db-1", "--class", "production")
	prod := sshCmd(prodSSHD, "-o", "HostKeyAlias=prod-db-1")
	a := w.e.StartRun("coder")

	job := a.Start(prod)
	c := w.e.WaitCard()
	if c.Mode != "per-call" {
		t.Fatalf("production card: %+v", c)
	}
	out := w.e.MustRun("postern", "approve", c.ID, "--session").Stdout
	if want := c.ID + ": approved once"; strings.TrimSpace(out) != want {
		t.Errorf("postern approve --session on a per-call card printed %q, want %q", strings.TrimSpace(out), want)
	}
	mustSucceed(t, "prod", job.Wait())

	job = a.Start(prod)
	c = w.e.WaitCard()
	if c.Mode != "per-call" {
		t.Fatalf("second production card: %+v", c)
	}
	if said := pipedAnswer(t, w.e, "session "+c.ID, c.ID); said != c.ID+": approved once" {
		t.Errorf("the piped console's answer \"session %s\" to a per-call card said %q, want %q", c.ID, said, c.ID+": approved once")
	}
	mustSucceed(t, "prod again", job.Wait())

	job = a.Start(prod)
	c = w.e.WaitCard()
	if c.Mode != "per-call" {
		t.Fatalf("third production card: %+v", c)
	}
	w.e.MustRun("postern", "deny", c.ID)
	if r := job.Wait(); r.Code == 0 {
		t.Fatalf("a denied login succeeded: %s", r)
	}
}

// pipedAnswer gives the piped console (postern approve --json) the
// answer line and returns the line it says about card id on its
// standard error.
func pipedAnswer(t *testing.T, e *Env, line, id string) string {
	t.Helper()
	cmd := e.Command("postern", "approve", "--json")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	errs, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	if _, err := in.Write([]byte(line + "\n")); err != nil {
		t.Fatal(err)
	}
	said := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(errs)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), id+": ") && !strings.HasSuffix(sc.Text(), ": closed") {
				said <- sc.Text()
				return
			}
		}
		close(said)
	}()
	select {
	case s := <-said:
		return s
	case <-time.After(30 * time.Second):
		t.Fatalf("the piped console said nothing of card %s", id)
	}
	return ""
}
