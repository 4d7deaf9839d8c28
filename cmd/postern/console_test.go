package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/gateway/api"
)

func sessionCard() api.Card {
	return api.Card{
		ID: "C1", Mode: "session", Selected: 1,
		Subjects: []approvals.RunView{
			{ProcessView: approvals.ProcessView{PID: 13, Name: "ssh"}},
			{ProcessView: approvals.ProcessView{PID: 10, Name: "claude"}},
		},
	}
}

// A session binds the run marked on the card: the proposed agent unless
// the person moves the mark, in one step.
func TestCardPromptSessionSubject(t *testing.T) {
	p := newCardPrompt(sessionCard())
	if r := p.key("s"); r.verdict != api.VerdictSession || r.subject != 1 {
		t.Fatalf("s on the proposed run: %+v", r)
	}
	p.key("left")
	if r := p.key("s"); r.subject != 0 {
		t.Fatalf("after ←: %+v", r)
	}
	p.key("1")
	if r := p.key("s"); r.subject != 1 {
		t.Fatalf("after 1: %+v", r)
	}
	if !strings.Contains(p.subjects(), "▶ 1. claude (pid 10)  (proposed)") {
		t.Fatalf("subjects:\n%s", p.subjects())
	}
}

// A per-call login card takes the destination's name typed out: single
// keys do not approve it, a wrong word does not, "d" and Enter denies.
func TestCardPromptDeliberate(t *testing.T) {
	c := api.Card{ID: "C2", Mode: "per-call", Destination: &approvals.DestView{Fingerprint: "SHA256:x", Names: []string{"db-1"}}}
	p := newCardPrompt(c)
	for _, k := range []string{"o", "s", "enter"} {
		if r := p.key(k); r.verdict != 0 {
			t.Fatalf("key %q answered a deliberate card: %+v", k, r)
		}
	}
	typeWord(p, "db-2")
	if r := p.key("enter"); r.verdict != 0 || r.note == "" {
		t.Fatalf("a wrong name approved: %+v", r)
	}
	typeWord(p, "db-1")
	if r := p.key("enter"); r.verdict != api.VerdictOnce {
		t.Fatalf("the name typed out: %+v", r)
	}
	p = newCardPrompt(c)
	p.key("d")
	if r := p.key("enter"); r.verdict != api.VerdictDeny {
		t.Fatalf("d and Enter: %+v", r)
	}
}

// What is typed for a per-call card is bounded: junk typed there (a
// pasted file, a program typing into the terminal) is not held and
// redrawn without end, and the card's question stays short enough to
// read; past the word's length nothing more is taken, and Enter then
// tells the person the name was not typed exactly.
func TestCardPromptTypedIsBounded(t *testing.T) {
	c := api.Card{ID: "C2", Mode: "per-call", Destination: &approvals.DestView{Fingerprint: "SHA256:x", Names: []string{"db-1"}}}
	p := newCardPrompt(c)
	for range 100000 {
		p.key("x")
	}
	if n := len(p.typed); n > len("deny")+1 {
		t.Fatalf("%d bytes typed for the name %q are held", n, "db-1")
	}
	if r := p.key("enter"); r.verdict != 0 || r.note == "" {
		t.Fatalf("junk typed approved or said nothing: %+v", r)
	}
	typeWord(p, "db-1")
	if r := p.key("enter"); r.verdict != api.VerdictOnce {
		t.Fatalf("the name typed out after the junk was refused: %+v", r)
	}
}

// The full-screen console and the line console ask the same deliberate
// answer of the same card: a per-call login whose client proved no
// destination, or whose host key has no name in the inventory, takes
// "unknown" typed out in both; a production host takes its inventory
// name in both.
func TestConsolesAskTheSameWord(t *testing.T) {
	for _, c := range []api.Card{
		{ID: "C1", Mode: "per-call", Purpose: "auth", Unverified: "the client did not prove where it connects"},
		{ID: "C2", Mode: "per-call", Purpose: "auth", Destination: &approvals.DestView{Fingerprint: "SHA256:y"}},
		{ID: "C3", Mode: "per-call", Purpose: "auth", Destination: &approvals.DestView{Fingerprint: "SHA256:x", Names: []string{"[10.0.0.5]:22", "prod-db-1"}, Classes: []string{"production"}}},
		{ID: "C4", Mode: "per-call", Purpose: "sshsig"},
	} {
		full, line := newCardPrompt(c), newPrompt(c)
		if full.word != line.word {
			t.Errorf("card %s: the full-screen console asks %q, the line console %q", c.ID, full.word, line.word)
		}
		if c.Purpose == "sshsig" {
			continue
		}
		if r := full.key("o"); r.verdict != 0 {
			t.Errorf("card %s: o answered a per-call login on the full-screen console: %+v", c.ID, r)
		}
		if r := line.read("o\n"); r.verdict != 0 {
			t.Errorf("card %s: o answered a per-call login on the line console: %+v", c.ID, r)
		}
	}
}

// A key pressed while a card has been on screen for less than armDelay
// does not answer it, and a new card discards typed-ahead input.
func TestConsoleArming(t *testing.T) {
	flushed := 0
	m := newConsoleModel(nil, func() { flushed++ })
	m.Update(cardsMsg{sessionCard()})
	if flushed != 1 {
		t.Fatalf("a new card flushed input %d times", flushed)
	}
	_, cmd := m.Update(tea.KeyPressMsg{Code: 'o', Text: "o"})
	if cmd != nil || !strings.Contains(m.note, "just appeared") {
		t.Fatalf("a key at once answered: note %q", m.note)
	}
	m.shownAt = time.Now().Add(-armDelay)
	if _, cmd = m.Update(tea.KeyPressMsg{Code: 'o', Text: "o"}); cmd == nil {
		t.Fatal("an armed card took no answer")
	}
	// The same card again (the list refreshed): not shown anew.
	m.Update(cardsMsg{sessionCard()})
	if flushed != 1 {
		t.Fatal("a card already on screen flushed input again")
	}
}

// After an answer that was not applied (the gateway refused it, or went
// away) the console starts over on the card: pending input discarded,
// the card armed anew, and what was typed for it forgotten, so the next
// Enter does not send the name typed before the error again.
func TestConsoleResynchronisesAfterAnError(t *testing.T) {
	flushed := 0
	m := newConsoleModel(nil, func() { flushed++ })
	c := api.Card{ID: "C2", Mode: "per-call", Purpose: "auth", Destination: &approvals.DestView{Fingerprint: "SHA256:x", Names: []string{"db-1"}}}
	m.Update(cardsMsg{c})
	m.shownAt = time.Now().Add(-armDelay)
	typeKeys(m, "db-1")
	if _, cmd := m.Update(tea.KeyPressMsg{Code: tea.KeyEnter}); cmd == nil {
		t.Fatal("the name typed out sent no answer")
	}
	m.Update(doneMsg{text: "C2: not applied: the gateway went away", failed: true, card: "C2"})
	if flushed != 2 {
		t.Fatalf("an error flushed input %d times, want once more", flushed-1)
	}
	if _, cmd := m.Update(tea.KeyPressMsg{Code: tea.KeyEnter}); cmd != nil || !strings.Contains(m.note, "just appeared") {
		t.Fatalf("Enter at once after the error answered again: note %q", m.note)
	}
	m.shownAt = time.Now().Add(-armDelay)
	if _, cmd := m.Update(tea.KeyPressMsg{Code: tea.KeyEnter}); cmd != nil {
		t.Fatal("Enter after the error sent the name typed before it")
	}
}

// floodCards is what a run that sends many requests at once leaves
// pending: n cards, the last one a per-call login with a relayed command.
func floodCards(n int) []api.Card {
	var cards []api.Card
	for i := range n {
		c := api.Card{ID: fmt.Sprintf("C%d", i), Mode: "session", Selected: 0,
			Subjects: []approvals.RunView{{ProcessView: approvals.ProcessView{PID: 100 + i, Name: "agent"}}},
			Created:  time.Now(), Expires: time.Now().Add(time.Minute)}
		if i == n-1 {
			c.Mode, c.Purpose = "per-call", "auth"
			c.Destination = &approvals.DestView{Fingerprint: "SHA256:x", Names: []string{"prod-db-1"}}
			c.Relay, c.Command = approvals.RelayExec, "rm -rf /srv/data"
		}
		cards = append(cards, c)
	}
	return cards
}

// screen renders m as a window of height lines shows it: a view taller
// than the window loses its top lines, as the terminal drops them.
// armedConsole is a console in a window of width×height showing card c,
// armed (shown long enough for a key to answer it), and the window's
// lines, as screen returns them.
func armedConsole(c api.Card, width, height int) (m *consoleModel, view string, taller bool) {
	m = newConsoleModel(nil, nil)
	m.Update(tea.WindowSizeMsg{Width: width, Height: height})
	m.Update(cardsMsg{c})
	m.shownAt = time.Now().Add(-armDelay)
	lines, taller := screen(m, height)
	return m, strings.Join(lines, "\n"), taller
}

func screen(m *consoleModel, height int) (lines []string, taller bool) {
	lines = strings.Split(strings.TrimSuffix(m.View().Content, "\n"), "\n")
	if len(lines) > height {
		return lines[len(lines)-height:], true
	}
	return lines, false
}

// However many cards a run leaves pending, the selected card is shown
// from its question down, with its command, in a window of 30 lines.
func TestConsoleFitsTheCardToTheWindow(t *testing.T) {
	m := newConsoleModel(nil, nil)
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	for i := range 8 {
		m.recentAdd(fmt.Sprintf("earlier answer %d", i))
	}
	cards := floodCards(60)
	m.Update(cardsMsg(cards))
	for range len(cards) - 1 {
		m.Update(tea.KeyPressMsg{Code: tea.KeyDown})
	}
	lines, taller := screen(m, 30)
	view := strings.Join(lines, "\n")
	if taller {
		t.Errorf("the view is taller than the window:\n%s", m.View().Content)
	}
	for _, want := range []string{"postern approve", "Allow, this one time, agent (pid 159)", "Command (relayed by the bastion, exactly): rm -rf /srv/data", "▶ C59", "more cards", "type prod-db-1"} {
		if !strings.Contains(view, want) {
			t.Errorf("the window does not show %q:\n%s", want, view)
		}
	}
}

// A card taller than the window is shown from its top, says that it
// goes on, and can be denied but not approved until it fits.
func TestConsoleCutCardIsNotApproved(t *testing.T) {
	m := newConsoleModel(nil, nil)
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 12})
	c := floodCards(1)[0]
	m.Update(cardsMsg{c})
	m.shownAt = time.Now().Add(-armDelay)
	lines, taller := screen(m, 12)
	view := strings.Join(lines, "\n")
	if taller || !strings.Contains(view, "Allow, this one time") || !strings.Contains(view, "the card goes on below") {
		t.Fatalf("a card taller than the window (%v):\n%s", taller, m.View().Content)
	}
	typeKeys(m, "prod-db-1")
	if _, cmd := m.Update(tea.KeyPressMsg{Code: tea.KeyEnter}); cmd != nil || !strings.Contains(m.note, "does not fit this window") {
		t.Fatalf("a cut card was approved: note %q", m.note)
	}
	// Taller, the same answer goes through; a denial always does.
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 60})
	typeKeys(m, "prod-db-1")
	if _, cmd := m.Update(tea.KeyPressMsg{Code: tea.KeyEnter}); cmd == nil {
		t.Fatalf("the card, whole on screen, took no answer: note %q", m.note)
	}
	m = newConsoleModel(nil, nil)
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 12})
	m.Update(cardsMsg{c})
	m.shownAt = time.Now().Add(-armDelay)
	m.Update(tea.KeyPressMsg{Code: 'd', Text: "d"})
	if _, cmd := m.Update(tea.KeyPressMsg{Code: tea.KeyEnter}); cmd == nil {
		t.Fatal("a cut card could not be denied")
	}
}

// While a card takes a host's name typed out, j and k are letters of the
// name, not the keys that move to another card.
func TestConsoleWordTakesJAndK(t *testing.T) {
	m := newConsoleModel(nil, nil)
	c := api.Card{ID: "C2", Mode: "per-call", Purpose: "auth", Destination: &approvals.DestView{Fingerprint: "SHA256:x", Names: []string{"jk-db"}}}
	other := sessionCard()
	m.Update(cardsMsg{c, other})
	m.shownAt = time.Now().Add(-armDelay)
	typeKeys(m, "jk-db")
	if _, cmd := m.Update(tea.KeyPressMsg{Code: tea.KeyEnter}); cmd == nil || m.current().ID != "C2" {
		t.Fatalf("the name typed out did not answer card C2 (on card %s): note %q", m.current().ID, m.note)
	}
}

// Coming back to the cards tab from another arms the card anew: keys
// typed for the runs or the journal never answer a card.
func TestConsoleReturnToCardsRearms(t *testing.T) {
	flushed := 0
	m := newConsoleModel(nil, func() { flushed++ })
	m.Update(cardsMsg{sessionCard()})
	m.shownAt = time.Now().Add(-armDelay)
	for range 3 {
		m.Update(tea.KeyPressMsg{Code: tea.KeyTab})
	}
	if m.tab != tabCards {
		t.Fatalf("three tabs did not come back to the cards: tab %d", m.tab)
	}
	if _, cmd := m.Update(tea.KeyPressMsg{Code: 'o', Text: "o"}); cmd != nil || !strings.Contains(m.note, "just appeared") {
		t.Fatalf("a key at once after coming back to the cards answered: note %q", m.note)
	}
	if flushed != 2 {
		t.Fatalf("coming back to the cards flushed input %d times, want once more", flushed-1)
	}
}

// A program that types into the terminal without a pause never answers
// a card: the card is armed only after armDelay with no key pressed, and
// each key pressed before that starts the wait again.
func TestConsoleKeyStreamNeverArms(t *testing.T) {
	m := newConsoleModel(nil, nil)
	m.Update(cardsMsg{sessionCard()})
	for range 8 {
		m.Update(tea.KeyPressMsg{Code: 'x', Text: "x"})
		time.Sleep(armDelay / 5)
	}
	if _, cmd := m.Update(tea.KeyPressMsg{Code: 'o', Text: "o"}); cmd != nil || !strings.Contains(m.note, "just appeared") {
		t.Fatalf("a key after %v of keys without a pause answered: note %q", 8*armDelay/5, m.note)
	}
	time.Sleep(armDelay)
	if _, cmd := m.Update(tea.KeyPressMsg{Code: 'o', Text: "o"}); cmd == nil {
		t.Fatalf("a key after %v without one did not answer: note %q", armDelay, m.note)
	}
}

// A card withdrawn while the person reads it never hands its answer to
// the card that takes its place under the cursor: the first key after
// the swap, however late, is not an answer; it says which card went
// away, and the new card waits to be read like one that just appeared.
func TestConsoleAnswerNotLandingOnTheCardMovedUnderTheCursor(t *testing.T) {
	m := newConsoleModel(nil, nil)
	a, b := sessionCard(), sessionCard()
	a.ID, b.ID = "CA", "CB"
	m.Update(cardsMsg{a, b})
	m.shownAt = time.Now().Add(-10 * armDelay) // read for a while
	// CA is withdrawn; CB is now under the cursor.
	m.Update(cardsMsg{b})
	if !strings.Contains(m.note, "CA") {
		t.Errorf("the screen does not say that card CA went away: note %q", m.note)
	}
	// The person, who decided about CA, presses s after a while.
	m.shownAt = time.Now().Add(-2 * armDelay)
	if _, cmd := m.Update(tea.KeyPressMsg{Code: 's', Text: "s"}); cmd != nil {
		t.Fatalf("s meant for the withdrawn card CA approved card CB, which moved under the cursor: note %q", m.note)
	}
	if !strings.Contains(m.note, "CA") || !strings.Contains(m.note, "CB") {
		t.Errorf("the refused key does not name the card gone and the card now shown: note %q", m.note)
	}
	// Once read, CB takes its answer.
	m.shownAt = time.Now().Add(-armDelay)
	if _, cmd := m.Update(tea.KeyPressMsg{Code: 's', Text: "s"}); cmd == nil {
		t.Fatalf("CB, read, took no answer: note %q", m.note)
	}
	// CB, answered here, goes: that is no card gone from under the person.
	m.Update(cardsMsg{})
	if m.gone != "" || strings.Contains(m.note, "no longer pending") {
		t.Fatalf("the card answered here reads as gone: note %q", m.note)
	}
}

// The name a per-call login takes typed out is shown whole by both
// consoles, however long the inventory name (up to 255 characters): a
// name cut with a marker could not be typed, and would not tell two
// hosts whose names differ only at the end apart.
func TestConsolesShowTheWholeWord(t *testing.T) {
	name := strings.Repeat("cluster-eu-west-", 5) + "prod-db-1"
	c := api.Card{ID: "C1", Mode: "per-call", Purpose: "auth", Destination: &approvals.DestView{Fingerprint: "SHA256:x", Names: []string{name}}}
	full, line := newCardPrompt(c), newPrompt(c)
	for what, q := range map[string]string{
		"the full-screen console's question": full.question(),
		"the line console's question":        line.question(),
		"the full-screen console's refusal":  full.key("enter").note,
		"the line console's refusal":         line.read("x\n").note,
	} {
		if !strings.Contains(q, "type "+name) {
			t.Errorf("%s does not show the name to type whole: %q", what, q)
		}
	}
}

// A policy change card, which has no run, no destination and no time
// limit, is listed as what it is, not as a request of a run named "" to
// an unknown destination with no time left.
func TestConsoleListsAPolicyChange(t *testing.T) {
	now := time.Now()
	m := newConsoleModel(nil, nil)
	m.now = now
	m.Update(cardsMsg{{ID: "CP", Kind: approvals.KindPolicyChange, Mode: "per-call", Reason: "policy_change", Created: now.Add(-time.Minute)}})
	row := m.cardRows()[0]
	for _, bad := range []string{`""`, "destination unknown", "0s left"} {
		if strings.Contains(row, bad) {
			t.Errorf("the policy change's row says %q: %q", bad, row)
		}
	}
	if !strings.Contains(row, "configuration change") {
		t.Errorf("the policy change's row does not say what it is: %q", row)
	}
}

// "d" and Enter denies, as the question says, on both consoles, even
// for a host whose inventory name is "d" or "deny": a person who means
// no never approves a login.
func TestConsolesDenyWinsOverTheWord(t *testing.T) {
	for _, name := range []string{"d", "deny"} {
		c := api.Card{ID: "C1", Mode: "per-call", Purpose: "auth", Destination: &approvals.DestView{Fingerprint: "SHA256:x", Names: []string{name}}}
		full := newCardPrompt(c)
		typeWord(full, name)
		if r := full.key("enter"); r.verdict != api.VerdictDeny {
			t.Errorf("%q and Enter on the full-screen console: verdict %v, want deny", name, r.verdict)
		}
		if r := newPrompt(c).read(name + "\n"); r.verdict != api.VerdictDeny {
			t.Errorf("%q on the line console: verdict %v, want deny", name, r.verdict)
		}
	}
}

// The runs a session could cover are listed with their executables, as
// the line console lists them: a run marked with ←/→ or a digit is one
// the card's own lines do not describe, and its name and pid alone are
// what the requester chose.
func TestConsoleSubjectsShowTheirExecutables(t *testing.T) {
	c := sessionCard()
	c.Subjects[0].Exe = "/usr/bin/ssh"
	c.Subjects[1].Exe = "/home/u/.local/bin/claude\x1b[2J"
	s := newCardPrompt(c).subjects()
	for _, want := range []string{"/usr/bin/ssh", `/home/u/.local/bin/claude\x1b[2J`} {
		if !strings.Contains(s, want) {
			t.Errorf("the runs a session could cover do not show %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "\x1b") {
		t.Errorf("an executable's path reaches the terminal unescaped:\n%q", s)
	}
}

// The card on screen describes the run a session would cover: when the
// person marks another run than the proposed one, its question and its
// Run line name the marked run.
func TestConsoleCardDescribesTheMarkedRun(t *testing.T) {
	c := sessionCard()
	c.Subjects[0].Exe, c.Subjects[1].Exe = "/usr/bin/ssh", "/usr/bin/claude"
	m := newConsoleModel(nil, nil)
	m.Update(cardsMsg{c})
	m.shownAt = time.Now().Add(-armDelay)
	m.Update(tea.KeyPressMsg{Code: tea.KeyLeft})
	text := m.layout().text
	for _, want := range []string{"Allow, for this run until it exits, ssh (pid 13)", "Run: ssh (pid 13, /usr/bin/ssh"} {
		if !strings.Contains(text, want) {
			t.Errorf("with run 0 marked, the card does not read %q:\n%s", want, text)
		}
	}
}

// typeWord gives a card's prompt the keys of s, one letter at a time.
func typeWord(p *cardPrompt, s string) {
	for _, k := range strings.Split(s, "") {
		p.key(k)
	}
}

// typeKeys presses the keys of s on the console, one letter at a time.
func typeKeys(m *consoleModel, s string) {
	for _, k := range strings.Split(s, "") {
		m.Update(tea.KeyPressMsg{Code: rune(k[0]), Text: k})
	}
}

// While a card takes a host's name typed out, q is a letter of it, and
// the header says how to quit instead: it never offers a key that does
// something else.
func TestConsoleHeaderNamesTheQuitKeyThatWorks(t *testing.T) {
	m := newConsoleModel(nil, nil)
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	c := api.Card{ID: "C2", Mode: "per-call", Purpose: "auth", Subjects: sessionCard().Subjects, Destination: &approvals.DestView{Fingerprint: "SHA256:x", Names: []string{"qa-db"}}}
	m.Update(cardsMsg{c})
	m.shownAt = time.Now().Add(-armDelay)
	if view := m.View().Content; strings.Contains(view, "q: quit") || !strings.Contains(view, "ctrl+c: quit") {
		t.Fatalf("the header of a card that takes a name typed out:\n%s", view)
	}
	typeKeys(m, "qa-db")
	if _, cmd := m.Update(tea.KeyPressMsg{Code: tea.KeyEnter}); cmd == nil {
		t.Fatalf("the name typed out, q included, did not answer the card: note %q", m.note)
	}
	m = newConsoleModel(nil, nil)
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	m.Update(cardsMsg{sessionCard()})
	if view := m.View().Content; !strings.Contains(view, "q: quit") {
		t.Fatalf("the header of a card answered by keys:\n%s", view)
	}
}
