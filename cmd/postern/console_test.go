package main

import (
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
	for _, k := range strings.Split("db-2", "") {
		p.key(k)
	}
	if r := p.key("enter"); r.verdict != 0 || r.note == "" {
		t.Fatalf("a wrong name approved: %+v", r)
	}
	for _, k := range strings.Split("db-1", "") {
		p.key(k)
	}
	if r := p.key("enter"); r.verdict != api.VerdictOnce {
		t.Fatalf("the name typed out: %+v", r)
	}
	p = newCardPrompt(c)
	p.key("d")
	if r := p.key("enter"); r.verdict != api.VerdictDeny {
		t.Fatalf("d and Enter: %+v", r)
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
	for _, k := range strings.Split("db-1", "") {
		m.Update(tea.KeyPressMsg{Code: rune(k[0]), Text: k})
	}
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
