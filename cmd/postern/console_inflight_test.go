package main

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
)

// A card that goes away while the person's answer to it is on its way
// (it timed out, or was answered elsewhere, at that moment) and whose
// answer then fails is a card gone from under the cursor: the person,
// told the answer was not applied, answers again, and that key answers
// no card, least of all the one that moved under the cursor meanwhile.
func TestConsoleAnswerRetriedAfterItsCardWentDoesNotLandOnTheNext(t *testing.T) {
	m := newConsoleModel(nil, nil)
	a, b := sessionCard(), sessionCard()
	a.ID, b.ID = "CA", "CB"
	m.Update(cardsMsg{a, b})
	m.shownAt = time.Now().Add(-10 * armDelay)
	if _, cmd := m.Update(tea.KeyPressMsg{Code: 's', Text: "s"}); cmd == nil {
		t.Fatalf("CA, read, took no answer: note %q", m.note)
	}
	// CA times out as the answer goes; the answer comes back refused.
	m.Update(cardsMsg{b})
	m.Update(doneMsg{text: "CA: not applied: card CA: no such card", failed: true, card: "CA"})
	if !strings.Contains(m.note, "CB") {
		t.Errorf("the screen does not say that card CB is under the cursor now: note %q", m.note)
	}
	// The person answers again, a while later.
	m.shownAt = time.Now().Add(-2 * armDelay)
	if _, cmd := m.Update(tea.KeyPressMsg{Code: 's', Text: "s"}); cmd != nil {
		t.Fatalf("s, pressed again for CA after its answer failed, approved card CB, which moved under the cursor: note %q", m.note)
	}
	m.shownAt = time.Now().Add(-armDelay)
	if _, cmd := m.Update(tea.KeyPressMsg{Code: 's', Text: "s"}); cmd == nil {
		t.Fatalf("CB, read, took no answer: note %q", m.note)
	}
}
