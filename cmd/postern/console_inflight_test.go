package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/postern/postern/gateway/api"
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

// So for a journal entry resolved elsewhere while the console's "not
// started" for it was on its way: once that fails, the next n, pressed
// to record it again, does not record the entry that moved under the
// cursor as not started.
func TestConsoleResolveRetriedAfterItsEntryWentDoesNotLandOnTheNext(t *testing.T) {
	entry := func(id string) *api.JournalEntry { return &api.JournalEntry{ID: id, Started: time.Now()} }
	// No gateway answers on this socket: the resolution fails.
	m := newConsoleModel(api.NewClient(filepath.Join(t.TempDir(), "agent.sock")), nil)
	m.showTab(tabJournal)
	m.Update(refreshMsg{unknown: []*api.JournalEntry{entry("J1"), entry("J2")}})
	m.shownAt = time.Now().Add(-10 * armDelay)
	_, cmd := m.Update(tea.KeyPressMsg{Code: 'n', Text: "n"})
	if cmd == nil {
		t.Fatalf("J1, read, was not resolved: note %q", m.note)
	}
	// J1 is resolved elsewhere as the console's resolution goes, which
	// then fails.
	m.Update(refreshMsg{unknown: []*api.JournalEntry{entry("J2")}})
	m.Update(cmd())
	if !strings.Contains(m.note, "J2") {
		t.Errorf("the screen does not say that entry J2 is under the cursor now: note %q", m.note)
	}
	m.shownAt = time.Now().Add(-2 * armDelay)
	if _, cmd := m.Update(tea.KeyPressMsg{Code: 'n', Text: "n"}); cmd != nil {
		t.Fatalf("n, pressed again for J1 after its resolution failed, records J2, which moved under the cursor, as not started: note %q", m.note)
	}
}
