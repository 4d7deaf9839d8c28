package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/postern/postern/gateway/api"
)

// The row that n would resolve as not started is on screen, however many
// entries a run's interrupted commands left unknown.
func TestConsoleJournalRowIsOnScreen(t *testing.T) {
	m := newConsoleModel(nil, nil)
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 20})
	m.Update(tea.KeyPressMsg{Code: tea.KeyTab})
	m.Update(tea.KeyPressMsg{Code: tea.KeyTab})
	var entries []*api.JournalEntry
	for i := range 50 {
		entries = append(entries, &api.JournalEntry{ID: fmt.Sprintf("J%08d", i), Started: time.Now()})
	}
	m.Update(refreshMsg{unknown: entries})
	for _, down := range []int{0, 30, 19} {
		for range down {
			m.Update(tea.KeyPressMsg{Code: tea.KeyDown})
		}
		lines, taller := screen(m, 20)
		view := strings.Join(lines, "\n")
		if taller || !strings.Contains(view, "▶ "+entries[m.row].ID) || !strings.Contains(view, "more entries") || !strings.Contains(view, "n records that it did not start") {
			t.Fatalf("row %d (%v):\n%s", m.row, taller, m.View().Content)
		}
	}
}

// The journal's tab says why there is no journal to show: no bastion, or
// the error itself (a damaged journal is not "not enabled").
func TestConsoleJournalTrouble(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{&api.Error{Code: api.CodeNoBastion, Msg: "the bastion is not enabled in this gateway"}, "the bastion is not enabled: no command journal"},
		{&api.Error{Code: api.CodeJournalDamaged, Msg: "journal damaged at entry 7\x1b[2J"}, `the command journal cannot be read: journal damaged at entry 7\x1b[2J`},
	} {
		m := newConsoleModel(nil, nil)
		m.Update(tea.WindowSizeMsg{Width: 160, Height: 20})
		m.Update(tea.KeyPressMsg{Code: tea.KeyTab})
		m.Update(tea.KeyPressMsg{Code: tea.KeyTab})
		m.Update(refreshMsg{jrnlErr: journalTrouble(tt.err)})
		lines, _ := screen(m, 20)
		if view := strings.Join(lines, "\n"); !strings.Contains(view, tt.want) || strings.Contains(view, "no command with an unknown outcome") {
			t.Errorf("%v:\n%s", tt.err, view)
		}
	}
}

// A run in its cooldown says so on the runs tab: its requests are
// refused without a card, and the person sees why no card comes.
func TestConsoleRunInCooldown(t *testing.T) {
	m := newConsoleModel(nil, nil)
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 20})
	m.Update(tea.KeyPressMsg{Code: tea.KeyTab})
	run := api.RunState{NoCardsUntil: time.Now().Add(30 * time.Second)}
	run.ID, run.Name, run.PID = "R1234", "claude", 42
	m.Update(refreshMsg{sessions: &api.SessionsResult{Runs: []api.RunState{run}}})
	lines, _ := screen(m, 20)
	if view := strings.Join(lines, "\n"); !strings.Contains(view, "run R1234  claude (pid 42)") || !strings.Contains(view, "refused without a card until ") {
		t.Errorf("the runs tab:\n%s", view)
	}
}

// A run's name is the requester's: the console quotes one that holds a
// space, a parenthesis or an arrow, so that it cannot pose as the run the
// card proposes, as a destination in the list of cards, or as another
// run's row.
func TestConsoleQuotesRunNames(t *testing.T) {
	c := sessionCard()
	c.Subjects[0].Name = "ssh (pid 10)  (proposed)"
	c.Run = c.Subjects[1]
	c.Run.Name = "agent → prod-db-1"
	p := newCardPrompt(c)
	if s := p.subjects(); !strings.Contains(s, `  0. "ssh (pid 10)  (proposed)" (pid 13)`) || strings.Count(s, "(proposed)\n") != 1 {
		t.Errorf("a subject's name poses as the proposed run:\n%s", s)
	}
	m := newConsoleModel(nil, nil)
	m.Update(cardsMsg{c})
	if rows := m.cardRows(); !strings.Contains(rows[0], `"agent → prod-db-1" → destination unknown`) {
		t.Errorf("a run's name poses as a destination: %s", rows[0])
	}
	run := api.RunState{}
	run.ID, run.Name, run.PID, run.Label = "R1", "claude", 42, "x  run R2  claude (pid 7)"
	m.Update(refreshMsg{sessions: &api.SessionsResult{Runs: []api.RunState{run}}})
	if _, lines := m.runRows(); !strings.Contains(lines[0], `label "x  run R2  claude (pid 7)"`) {
		t.Errorf("a run's label poses as another run: %s", lines[0])
	}
}

// Resolving a journal entry is an answer: like a card, the chosen entry
// takes a key only once it has been on screen for armDelay with no key
// pressed, and again each time the tab is shown or another entry comes
// under the cursor (a move, or a refresh that changed the list), so keys
// a program types never resolve an entry the person did not read.
func TestConsoleJournalResolutionIsArmed(t *testing.T) {
	m := newConsoleModel(nil, nil)
	m.Update(tea.KeyPressMsg{Code: tea.KeyTab})
	m.Update(tea.KeyPressMsg{Code: tea.KeyTab})
	j1, j2 := &api.JournalEntry{ID: "J1", Started: time.Now()}, &api.JournalEntry{ID: "J2", Started: time.Now()}
	m.Update(refreshMsg{unknown: []*api.JournalEntry{j1, j2}})
	if _, cmd := m.Update(tea.KeyPressMsg{Code: 'n', Text: "n"}); cmd != nil {
		t.Fatal("n resolved an entry at once, as the tab was shown")
	}
	m.shownAt = time.Now().Add(-armDelay)
	m.Update(tea.KeyPressMsg{Code: tea.KeyDown})
	if _, cmd := m.Update(tea.KeyPressMsg{Code: 'n', Text: "n"}); cmd != nil {
		t.Fatal("n resolved the entry a move had just chosen")
	}
	m.shownAt = time.Now().Add(-armDelay)
	m.Update(refreshMsg{unknown: []*api.JournalEntry{j1, {ID: "J3", Started: time.Now()}}})
	if _, cmd := m.Update(tea.KeyPressMsg{Code: 'n', Text: "n"}); cmd != nil {
		t.Fatal("n resolved the entry a refresh had just put under the cursor")
	}
	m.shownAt = time.Now().Add(-armDelay)
	if _, cmd := m.Update(tea.KeyPressMsg{Code: 'n', Text: "n"}); cmd == nil {
		t.Fatalf("an entry read for armDelay was not resolved: note %q", m.note)
	}
}

// The runs tab's cursor stays on the run or grant it is on when a
// refresh changes the list above it, so that r revokes the row the
// person chose, not the one that moved under the cursor; when that row
// is gone, r revokes nothing until the person has seen what is under
// the cursor now.
func TestConsoleRevokeFollowsTheChosenRow(t *testing.T) {
	run := func(id string) api.RunState {
		var r api.RunState
		r.ID, r.Name, r.PID = id, "agent-"+id, 100
		return r
	}
	m := newConsoleModel(nil, nil)
	m.Update(refreshMsg{sessions: &api.SessionsResult{Runs: []api.RunState{run("R1"), run("R2"), run("R3")}}})
	m.showTab(tabRuns)
	m.Update(tea.KeyPressMsg{Code: tea.KeyDown})
	chosen := func() string { ids, _ := m.runRows(); return ids[m.row] }
	if chosen() != "R2" {
		t.Fatalf("↓ chose %s", chosen())
	}
	// R1 ends: R3 would slide under the cursor.
	m.Update(refreshMsg{sessions: &api.SessionsResult{Runs: []api.RunState{run("R2"), run("R3")}}})
	if chosen() != "R2" {
		t.Fatalf("after a refresh the cursor, on R2, is on %s: r would revoke it", chosen())
	}
	// R2 ends: the cursor's row is gone, and r revokes nothing.
	m.Update(refreshMsg{sessions: &api.SessionsResult{Runs: []api.RunState{run("R3")}}})
	if _, cmd := m.Update(tea.KeyPressMsg{Code: 'r', Text: "r"}); cmd != nil {
		t.Fatalf("r revoked %s, which moved under the cursor after R2 ended", chosen())
	}
	if !strings.Contains(m.note, "R2") {
		t.Errorf("the console does not say that R2 is gone: note %q", m.note)
	}
	if _, cmd := m.Update(tea.KeyPressMsg{Code: 'r', Text: "r"}); cmd == nil {
		t.Fatal("r, pressed again, did not revoke the row now seen")
	}
}

// The journal tab's cursor stays on the entry it is on when a refresh
// changes the list above it, so that n records "not started" for the
// command the person checked on the host, never for the one that moved
// under the cursor; when that entry is gone, the next n records nothing.
func TestConsoleResolveFollowsTheChosenEntry(t *testing.T) {
	entry := func(id string) *api.JournalEntry { return &api.JournalEntry{ID: id, Started: time.Now()} }
	m := newConsoleModel(nil, nil)
	m.showTab(tabJournal)
	m.Update(refreshMsg{unknown: []*api.JournalEntry{entry("J1"), entry("J2"), entry("J3")}})
	m.Update(tea.KeyPressMsg{Code: tea.KeyDown})
	chosen := func() string { return m.refresh.unknown[m.row].ID }
	// The person checks J2 on the host; meanwhile J1 is resolved elsewhere.
	m.shownAt = time.Now().Add(-armDelay)
	m.Update(refreshMsg{unknown: []*api.JournalEntry{entry("J2"), entry("J3")}})
	if chosen() != "J2" {
		t.Fatalf("after a refresh the cursor, on J2, is on %s: n would record it as not started", chosen())
	}
	// J2 is resolved elsewhere: n, meant for it, records nothing.
	m.shownAt = time.Now().Add(-armDelay)
	m.Update(refreshMsg{unknown: []*api.JournalEntry{entry("J3")}})
	m.shownAt = time.Now().Add(-armDelay)
	if _, cmd := m.Update(tea.KeyPressMsg{Code: 'n', Text: "n"}); cmd != nil {
		t.Fatalf("n, meant for J2, resolved %s, which moved under the cursor", chosen())
	}
	if !strings.Contains(m.note, "J2") {
		t.Errorf("the console does not say that J2 is gone: note %q", m.note)
	}
}

// The runs tab says so when the runs and grants could not be read (the
// gateway did not answer), and does not show "no live runs or grants",
// which a person takes for nothing left to revoke.
func TestConsoleRunsTabSaysWhenTheyCannotBeRead(t *testing.T) {
	m := newConsoleModel(api.NewClient(filepath.Join(t.TempDir(), "agent.sock")), nil)
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 20})
	m.Update(tea.KeyPressMsg{Code: tea.KeyTab})
	m.Update(m.reload()())
	lines, _ := screen(m, 20)
	if view := strings.Join(lines, "\n"); strings.Contains(view, "no live runs or grants") || !strings.Contains(view, "the runs and grants cannot be read: ") {
		t.Fatalf("the runs tab, when the gateway did not answer:\n%s", view)
	}
}
