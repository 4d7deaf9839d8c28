package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// startPolicyLineConsole starts a gateway and a line console in a tmux
// window rows lines tall, and returns a function that writes a
// configuration that loosens authority and returns its policy change
// card's id once the console shows it.
func startPolicyLineConsole(t *testing.T, rows int) (a *Agent, tmux func(...string) Result, screen func() string, propose func(config string) string) {
	t.Helper()
	e := newEnv(t)
	e.Config("")
	a = e.StartAgent()
	env := "env -i " + strings.Join(e.Environ(), " ")
	tmux = startTmux(t, e, 200, rows, env+" postern approve --line").run
	screen = func() string { return tmux("capture-pane", "-p", "-J", "-S", "-400").Stdout }
	waitFor(t, func() bool { return strings.Contains(screen(), "waiting for approval cards") })
	propose = func(config string) string {
		id := proposePolicy(t, e, config)
		waitFor(t, func() bool {
			return strings.HasSuffix(strings.TrimSpace(screen()), "?") && strings.Contains(screen(), "card "+id+": ")
		})
		return id
	}
	return a, tmux, screen, propose
}

// An answer the gateway refuses leaves its card pending: the line
// console asks about it again, so that the person can still answer it
// there. Here the console runs in the terminal session a run was
// started from, from which the gateway refuses to approve a policy
// change; the card is asked again and denied.
func TestLineConsoleAsksAgainACardAnAnswerLeftPending(t *testing.T) {
	e := newEnv(t)
	e.Config("")
	a := e.StartAgent()
	// The run starts once the console waits for cards: go names the
	// moment.
	goFile := e.Path("go")
	launch := fmt.Sprintf("(until test -e %s; do sleep 0.05; done; exec postern run --no-sandbox --label coder -- sleep 600 >%s 2>&1)", goFile, e.Path("run.out"))
	env := "env -i " + strings.Join(e.Environ(), " ")
	tmux := startTmux(t, e, 200, 60, env+" sh -c '"+launch+" & exec postern approve --line'").run
	screen := func() string { return tmux("capture-pane", "-p", "-J", "-S", "-400").Stdout }
	waitFor(t, e.consoleAttached)
	e.WriteFile("go", "", 0o600)
	a.WaitLog(t, "run registered")
	id := proposePolicy(t, e, runSection()+"read_write = [\"/tmp/postern-tree\"]\n")
	question := "card " + id + ": [o]nce, [d]eny? "
	waitFor(t, func() bool {
		return strings.HasSuffix(screen(), strings.TrimSpace(question)) || strings.Contains(screen(), question)
	})
	tmux("send-keys", "o", "Enter")
	waitFor(t, func() bool { return strings.Contains(screen(), "approve from another terminal") })
	for deadline := time.Now().Add(10 * time.Second); strings.Count(screen(), question) < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("card %s, still pending after an approval the gateway refused, is not asked about again:\n%s", id, screen())
		}
	}
	tmux("send-keys", "d", "Enter")
	waitFor(t, func() bool { return strings.Contains(screen(), id+": denied") })
	if strings.Contains(a.Log(), "policy change approved") {
		t.Fatal("the change was approved")
	}
}

// A policy change card whose change is longer than a card shows can
// only be denied: the line console offers no approval of it, and says
// why when one is typed, where it offered "[o]nce" and the gateway then
// refused it.
func TestLineConsoleOffersOnlyDenialForACutPolicyChange(t *testing.T) {
	a, tmux, screen, propose := startPolicyLineConsole(t, 250)
	// A writable tree for runs, its path longer than a card line shows.
	long := "/tmp/" + strings.Repeat("postern-writable/", 70)
	id := propose(runSection() + fmt.Sprintf("read_write = [%q]\n", long))
	if q := screen(); strings.Contains(q, "card "+id+": [o]nce") || !strings.Contains(q, "card "+id+": it can only be denied: a change is longer than a card shows (change 1 of 1") {
		t.Fatalf("the console's question for a card that can only be denied:\n%s", q)
	}
	tmux("send-keys", "o", "Enter")
	waitFor(t, func() bool { return strings.Contains(screen(), "not approved: this card can only be denied") })
	tmux("send-keys", "d", "Enter")
	waitFor(t, func() bool { return strings.Contains(screen(), id+": denied") })
	if log := a.Log(); strings.Contains(log, "policy change approved") || strings.Contains(log, "longer than a card shows") {
		t.Fatalf("the change was approved, or an approval reached the gateway:\n%s", log)
	}
}

// A card taller than the terminal of the line console (a policy change
// that adds sixty writable trees: the one that matters may be the first)
// cannot be approved there, as on the full-screen console: its top went
// off the screen before the question. It can be denied, or, the terminal
// made taller, shown again and approved.
func TestLineConsoleCardTallerThanTheTerminalCannotBeApproved(t *testing.T) {
	mostlyWaits(t)
	a, tmux, screen, propose := startPolicyLineConsole(t, 40)
	paths := make([]string, 60)
	for i := range paths {
		paths[i] = fmt.Sprintf("%q", fmt.Sprintf("/tmp/postern-tree-%d", i))
	}
	id := propose(runSection() + "read_write = [" + strings.Join(paths, ", ") + "]\n")
	tmux("send-keys", "o", "Enter")
	time.Sleep(time.Second)
	if strings.Contains(screen(), id+": approved once") || strings.Contains(a.Log(), "policy change approved") {
		t.Fatalf("a card of 60 changes was approved in a terminal of 40 lines:\n%s", screen())
	}
	// Taller, the card is shown again, whole, and approved.
	tmux("resize-window", "-y", "100")
	tmux("send-keys", "Enter")
	waitFor(t, func() bool { return strings.HasSuffix(strings.TrimSpace(screen()), "card "+id+": [o]nce, [d]eny?") })
	tmux("send-keys", "o", "Enter")
	waitFor(t, func() bool { return strings.Contains(screen(), id+": approved once") })
}

// An approval the gateway refuses for a policy change card that shows a
// change cut exits 254, as every refused answer does (postern-approve(1)),
// not 1, as for an unknown card.
func TestApprovalOfACutPolicyChangeExits254(t *testing.T) {
	e := newEnv(t)
	e.Config("")
	e.StartAgent()
	id := proposePolicy(t, e, runSection()+fmt.Sprintf("read_write = [%q]\n", "/tmp/"+strings.Repeat("postern-writable/", 70)))
	if r := e.Run("postern", "approve", id, "--once"); r.Code != 254 || !strings.Contains(r.Stderr, "longer than a card shows") {
		t.Fatalf("postern approve %s --once: %v", id, r)
	}
}

// proposePolicy writes config, which loosens authority, and returns the
// id of the policy change card it brings up.
func proposePolicy(t *testing.T, e *Env, config string) string {
	t.Helper()
	e.Config(config)
	var id string
	waitFor(t, func() bool {
		for _, c := range e.cards() {
			if c.Kind == "policy_change" {
				id = c.ID
			}
		}
		return id != ""
	})
	return id
}
