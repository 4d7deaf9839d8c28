package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// An answer the gateway refuses leaves its card pending: the line
// console asks about it again, so that the person can still answer it
// there. A policy change card whose change is longer than a card shows
// can only be denied, and waits until it is answered: refused an
// approval, it is asked again and denied.
func TestLineConsoleAsksAgainACardAnAnswerLeftPending(t *testing.T) {
	e := newEnv(t)
	e.Config("")
	a := e.StartAgent()
	env := "env -i " + strings.Join(e.Environ(), " ")
	tmux := startTmux(t, e, 250, 80, env+" postern approve --line").run
	screen := func() string { return tmux("capture-pane", "-p", "-J", "-S", "-400").Stdout }
	waitFor(t, func() bool { return strings.Contains(screen(), "waiting for approval cards") })

	// A writable tree for runs, its path longer than a card line shows.
	long := "/tmp/" + strings.Repeat("postern-writable/", 70)
	e.Config(runSection() + fmt.Sprintf("read_write = [%q]\n", long))
	var id string
	waitFor(t, func() bool {
		for _, c := range e.cards() {
			if c.Kind == "policy_change" {
				id = c.ID
			}
		}
		return id != ""
	})
	question := "card " + id + ": [o]nce, [d]eny? "
	waitFor(t, func() bool { return strings.Contains(screen(), question) })
	tmux("send-keys", "o", "Enter")
	waitFor(t, func() bool { return strings.Contains(screen(), "longer than a card shows (change 1 of 1") })
	for deadline := time.Now().Add(10 * time.Second); strings.Count(screen(), question) < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the policy change card %s, still pending after an approval the gateway refused, is not asked about again:\n%s", id, screen())
		}
	}
	tmux("send-keys", "d", "Enter")
	waitFor(t, func() bool { return strings.Contains(screen(), id+": denied") })
	if strings.Contains(a.Log(), "policy change approved") {
		t.Fatal("the change was approved")
	}
}
