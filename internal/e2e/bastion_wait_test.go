package e2e

// Bastion commands only for someone waiting.

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A card whose client was killed is withdrawn, and approving it runs
// nothing; an identical command still RUNNING needs a person, on a card
// that says so.
func TestBastionCommandsOnlyForSomeoneWaiting(t *testing.T) {
	mostlyWaits(t)
	b := newBastionWorld(t, "[[rule]]\nkey = \"*\"\napproval = \"per-call\"\n")
	e := b.e
	marker := e.Path("ran-for-nobody")
	// The clients run in a terminal session of their own, as an agent's
	// do: the test answers from another one.
	cmd := e.Command("ssh", b.sshArgs(b.sshd.Port, "touch "+marker)...)
	cmd.SysProcAttr.Setsid = true
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := e.WaitCard()
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	waitFor(t, func() bool { return len(e.cards()) == 0 })
	if r := e.Run("postern", "approve", c.ID, "--once"); r.Code == 0 {
		t.Fatalf("the card of a killed client could still be approved: %s", r)
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran for nobody")
	}
	b.agent.WaitLog(t, "reason=canceled")

	// A long command, approved once, still running.
	long := "sleep 4; echo once >> " + e.Path("count")
	first := e.startDetached("ssh", b.sshArgs(b.sshd.Port, long)...)
	b.approve(e.WaitCard().ID, "--once")
	b.waitRunning(long)
	second := e.startDetached("ssh", b.sshArgs(b.sshd.Port, long)...)
	c = e.WaitCard()
	if c.Reason != "identical_running" || !strings.Contains(c.Changed, "still running") {
		t.Fatalf("the card for an identical running command: %+v", c)
	}
	text := e.MustRun("postern", "approve", "--list").Stdout
	if !strings.Contains(text, "The same command is still running: journal entry") {
		t.Fatalf("the card does not say the first still runs:\n%s", text)
	}
	e.MustRun("postern", "deny", c.ID)
	if r := <-second; r.Code != 254 {
		t.Fatalf("the identical command: %s", r)
	}
	if r := <-first; r.Code != 0 {
		t.Fatalf("the first command: %s", r)
	}
	if got := string(mustRead(t, e.Path("count"))); got != "once\n" {
		t.Fatalf("the command ran %q", got)
	}
	// Once it ended, the same command is asked about as any other.
	third := e.startDetached("ssh", b.sshArgs(b.sshd.Port, long)...)
	if c := e.WaitCard(); c.Reason != "per_call" {
		t.Fatalf("after the first ended: %+v", c)
	}
	e.MustRun("postern", "deny", e.WaitCard().ID)
	<-third
}

// startDetached runs a command in a terminal session of its own, in the
// background.
func (e *Env) startDetached(name string, args ...string) <-chan Result {
	res := make(chan Result, 1)
	cmd := e.Command(name, args...)
	cmd.SysProcAttr.Setsid = true
	go func() { res <- e.finish(cmd, "") }()
	return res
}
