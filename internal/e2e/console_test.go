package e2e

// The full-screen console (postern approve on a terminal), driven in a
// real tmux: keys typed before a card never answer it, the run to cover
// is one key with the agent preselected, a production login takes its
// host's name typed out, a run is revoked from the runs view, a command
// whose outcome was lost is resolved from the journal view, and a
// gateway restart is ridden out and said.

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

type consoleTerm struct {
	*tmuxServer
	t *testing.T
	w *approvalWorld
}

func startConsoleTerm(t *testing.T, w *approvalWorld) *consoleTerm {
	env := "env -i TERM=xterm-256color " + strings.Join(w.e.Environ(), " ")
	c := &consoleTerm{t: t, w: w, tmuxServer: startTmux(t, w.e, 200, 60, env+" postern approve")}
	c.wait("no pending cards: waiting")
	return c
}

func (c *consoleTerm) wait(what string) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(c.screen(), what) {
		if time.Now().After(deadline) {
			c.t.Fatalf("the console never showed %q:\n%s", what, c.screen())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestFullScreenConsole(t *testing.T) {
	w := newApprovalWorld(t, "", "git-host")
	prodSSHD := startSSHD(t, pubKey(t, w.key)+"\n", "prod-db-1")
	// A program added to agents is a loosening: it waits for a card.
	w.e.Config(fmt.Sprintf("known_hosts = [%q, %q]\nagents = [\"e2e.test\"]\n[[rule]]\nhost = \"prod-*\"\napproval = \"per-call\"\n", w.sshd.KnownHosts, prodSSHD.KnownHosts))
	w.agent.ApprovePolicy(t)
	// Names come from the host inventory: a host without one is asked
	// about per call.
	w.e.MustRun("postern", "hosts", "import", "git-host", "prod-db-1")
	git := sshCmd(w.sshd, "-o", "HostKeyAlias=git-host")
	prod := sshCmd(prodSSHD, "-o", "HostKeyAlias=prod-db-1")
	con := startConsoleTerm(t, w)
	a := w.e.StartRun("coder")

	// Typed ahead, before the card: it does not answer it.
	con.keys("o", "s")
	job := a.Start(git)
	card := w.e.WaitCard()
	con.wait("card " + card.ID + ": s approves this run until it exits")
	con.keys("s")
	time.Sleep(300 * time.Millisecond)
	if job.Done() || len(w.e.cards()) != 1 {
		t.Fatalf("a key pressed as the card appeared answered it:\n%s", con.screen())
	}
	for _, want := range []string{"Requested by: ssh (", "git-host", "Covers: this run and its descendants", "Run: e2e.test (pid ", "left"} {
		if !strings.Contains(con.screen(), want) {
			t.Errorf("the console does not show %q:\n%s", want, con.screen())
		}
	}
	// One step: s covers the marked run, the agent the card proposed.
	time.Sleep(time.Second)
	con.keys("s")
	con.wait(card.ID + ": approved for the run")
	mustSucceed(t, "approved in the console", job.Wait())
	mustSucceed(t, "inside the session", a.Do(git))

	// A production login: single keys do not approve it; its name does.
	job = a.Start(prod)
	card = w.e.WaitCard()
	con.wait("card " + card.ID + ": type prod-db-1 and Enter")
	time.Sleep(time.Second)
	con.keys("o", "s", "Enter")
	time.Sleep(300 * time.Millisecond)
	if job.Done() {
		t.Fatalf("a single key approved a production login:\n%s", con.screen())
	}
	con.keys("-l", "prod-db-1")
	con.keys("Enter")
	con.wait(card.ID + ": approved once")
	mustSucceed(t, "prod, approved by name", job.Wait())

	// The runs view: revoke the run's grants.
	con.keys("Tab")
	con.wait("run R")
	con.wait("grant G")
	con.keys("r")
	con.wait("revoked R")
	job = a.Start(git)
	w.e.WaitCard()
	con.keys("Tab")
	con.wait("the bastion is not enabled: no command journal")
	con.keys("Tab")
	con.wait("s approves this run until it exits")
	time.Sleep(time.Second)
	con.keys("d")
	con.wait(": denied")
	if job.Wait().Code == 0 {
		t.Fatal("signed after the console denied")
	}

	// The gateway restarts: the console says so and goes on.
	w.agent.Stop()
	con.wait("the gateway cannot be reached")
	w.agent = w.e.StartAgent()
	con.wait("reconnected: the gateway restarted")
}

// The journal view: a command whose outcome the bastion lost is listed,
// and resolved from the console ("n": not started, after the person
// checked the host); the gateway records it, and the entry leaves the
// view.
func TestFullScreenConsoleResolvesUnknownCommands(t *testing.T) {
	w := newApprovalWorld(t, "[bastion]\nenabled = true\n")
	entry := lostCommands(t, w, "systemctl restart app")[0]

	con := startConsoleTerm(t, w)
	con.keys("Tab")
	con.keys("Tab")
	con.wait(entry.ID)
	con.wait("systemctl restart app")
	// Resolving is an answer: not at once, as the entry came on screen.
	con.keys("n")
	con.wait("entry " + entry.ID + " just came under the cursor: read it first")
	time.Sleep(time.Second)
	con.keys("n")
	con.wait("resolved " + entry.ID + ": ")
	show := w.e.MustRun("postern", "journal", "show", entry.ID).Stdout
	if strings.Contains(show, "STATUS_UNKNOWN") || !strings.Contains(show, "answered in postern approve") {
		t.Fatalf("the entry after its resolution in the console:\n%s", show)
	}
	waitFor(t, func() bool { return !strings.Contains(con.screen(), "systemctl restart app") })
}
