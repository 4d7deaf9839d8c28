package e2e

// The line console (postern approve --line) cannot be typed ahead: keys
// typed before a card is shown never answer it, a per-call login needs its
// host's name typed out, and after an error the console starts over clean.

import (
	"strings"
	"testing"
	"time"
)

// startLineConsole starts a line console in tmux, with the production
// host prod-db-1 in the inventory, and waits until it waits for cards.
func startLineConsole(t *testing.T) (w *inventoryWorld, tmux func(...string) Result, screen func() string) {
	t.Helper()
	w = newInventoryWorld(t)
	w.e.MustRun("postern", "hosts", "add", "prod-db-1", "--class", "production")
	env := "env -i " + strings.Join(w.e.Environ(), " ")
	tmux = startTmux(t, w.e, 250, 80, env+" postern approve --line").run
	screen = func() string { return tmux("capture-pane", "-p", "-J", "-S", "-200").Stdout }
	waitFor(t, func() bool { return strings.Contains(screen(), "waiting for approval cards") })
	return w, tmux, screen
}

func TestLineConsoleCannotBeTypedAhead(t *testing.T) {
	w, tmux, screen := startLineConsole(t)
	e := w.e
	a := e.StartRun("coder")
	pending := func(id string) bool {
		for _, c := range e.cards() {
			if c.ID == id {
				return true
			}
		}
		return false
	}

	// Typed ahead, even the right word: discarded when the card shows.
	tmux("send-keys", "o", "Enter", "prod-db-1", "Enter")
	job := a.Start(w.ssh(w.prod))
	c := e.WaitCard()
	waitFor(t, func() bool {
		return strings.Contains(screen(), "card "+c.ID+": type prod-db-1 to approve this one use, or [d]eny?")
	})
	time.Sleep(500 * time.Millisecond)
	if !pending(c.ID) || job.Done() {
		t.Fatalf("keys typed before the card answered it:\n%s", screen())
	}
	// One key does not approve a per-call production login.
	tmux("send-keys", "o", "Enter")
	waitFor(t, func() bool { return strings.Contains(screen(), "not approved: type prod-db-1 exactly") })
	if !pending(c.ID) {
		t.Fatal("a single key approved a production login")
	}
	tmux("send-keys", "prod-db-1", "Enter")
	mustSucceed(t, "approved by name", job.Wait())
	waitFor(t, func() bool { return strings.Contains(screen(), c.ID+": approved once") })

	// An error (the card was answered elsewhere), then keys left over: the
	// next card starts clean.
	job = a.Start(w.ssh(w.prod))
	c = e.WaitCard()
	waitFor(t, func() bool { return strings.Contains(screen(), "card "+c.ID+": type") })
	e.MustRun("postern", "deny", c.ID)
	job.Wait()
	tmux("send-keys", "prod-db-1", "Enter")
	waitFor(t, func() bool { return strings.Contains(screen(), "card "+c.ID+": no longer pending") })
	tmux("send-keys", "prod-db-1", "Enter", "o", "Enter")
	job = a.Start(w.ssh(w.prod))
	c = e.WaitCard()
	waitFor(t, func() bool { return strings.Contains(screen(), "card "+c.ID+": type") })
	time.Sleep(500 * time.Millisecond)
	if !pending(c.ID) || job.Done() {
		t.Fatalf("keys left over after an error answered the next card:\n%s", screen())
	}
	tmux("send-keys", "d", "Enter")
	if r := job.Wait(); r.Code == 0 {
		t.Fatal("signed after a deny")
	}
	waitFor(t, func() bool { return strings.Contains(screen(), c.ID+": denied") })
}

// A card that went away (answered elsewhere, timed out, withdrawn) while
// the line console asked about another is not shown nor asked about
// after it: the console asks about the cards still pending.
func TestLineConsoleSkipsCardsThatWentAway(t *testing.T) {
	w := newInventoryWorld(t)
	e := w.e
	e.MustRun("postern", "hosts", "add", "prod-db-1", "--class", "production")
	e.StartConsole() // an approver while the cards come
	a := e.StartRun("coder")
	jobs := []*Job{a.Start(w.ssh(w.prod)), a.Start(w.ssh(w.prod))}
	var cs []cardJSON
	waitFor(t, func() bool { cs = e.cards(); return len(cs) == 2 })
	env := "env -i " + strings.Join(e.Environ(), " ")
	tmux := startTmux(t, e, 250, 80, env+" postern approve --line").run
	screen := func() string { return tmux("capture-pane", "-p", "-J", "-S", "-400").Stdout }
	asked := func(id string) bool { return strings.Contains(screen(), "card "+id+": type") }
	first, other := cs[0].ID, cs[1].ID
	waitFor(t, func() bool { return asked(first) || asked(other) })
	if asked(other) {
		first, other = other, first
	}
	// The other card is answered elsewhere while the console asks.
	e.MustRun("postern", "deny", other)
	waitFor(t, func() bool {
		for _, c := range e.cards() {
			if c.ID == other {
				return false
			}
		}
		return true
	})
	tmux("send-keys", "d", "Enter")
	waitFor(t, func() bool { return strings.Contains(screen(), first+": denied") })
	for _, j := range jobs {
		j.Wait()
	}
	// The next card that comes is the next asked.
	job := a.Start(w.ssh(w.prod))
	var next string
	waitFor(t, func() bool {
		for _, c := range e.cards() {
			if c.ID != first && c.ID != other {
				next = c.ID
			}
		}
		return next != "" && (asked(next) || asked(other))
	})
	if asked(other) {
		t.Fatalf("the console asked about card %s, denied elsewhere while it asked about %s:\n%s", other, first, screen())
	}
	tmux("send-keys", "d", "Enter")
	job.Wait()
}

// A card that goes away (answered elsewhere, timed out, withdrawn) while
// the line console asks about it is said to be gone at once, and the
// console moves on, with nothing typed.
func TestLineConsoleSaysACardWentAway(t *testing.T) {
	w, _, screen := startLineConsole(t)
	e := w.e
	a := e.StartRun("coder")
	job := a.Start(w.ssh(w.prod))
	c := e.WaitCard()
	waitFor(t, func() bool { return strings.Contains(screen(), "card "+c.ID+": type") })
	e.MustRun("postern", "deny", c.ID)
	job.Wait()
	waitFor(t, func() bool { return strings.Contains(screen(), "card "+c.ID+": no longer pending") })
}
