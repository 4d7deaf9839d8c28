package main

// The journal tab of the full-screen console: the commands whose outcome
// is unknown, and m and n, which resolve the entry under the cursor.
// Resolving an entry is an answer, armed as a card is.

import (
	"context"
	"fmt"
	"slices"

	tea "charm.land/bubbletea/v2"

	"github.com/postern/postern/gateway/api"
)

// showEntry arms the journal entry under the cursor anew when it is
// another entry than the one shown: after a move, or a refresh that
// changed the list.
func (m *consoleModel) showEntry() {
	if m.tab != tabJournal {
		return
	}
	id := ""
	if m.row < len(m.refresh.unknown) {
		id = m.refresh.unknown[m.row].ID
	}
	if id != m.entryID {
		m.entryID = id
		m.rearm()
	}
}

// followEntry keeps the journal tab's cursor on the entry it was on
// after a refresh, wherever it went in the list, so that m and n resolve
// the entry the person chose. When the entry is gone (resolved
// elsewhere, or its outcome came) the cursor stays where it was, the
// console says which entry is under it now, armed anew, and the next m
// or n resolves nothing (journalKey); when this console's own resolution
// of it was on its way, so once that fails (sentGone).
func (m *consoleModel) followEntry() {
	if m.tab != tabJournal {
		return
	}
	es := m.refresh.unknown
	if i := slices.IndexFunc(es, func(e *api.JournalEntry) bool { return e.ID == m.entryID }); i >= 0 {
		m.row = i
		return
	}
	m.row = min(m.row, max(len(es)-1, 0))
	switch {
	case m.entryID == "":
	case m.entryID != m.sent:
		m.entryGone = m.entryID
		m.note = entryGoneNote(m.entryGone, es, m.row)
	default:
		m.sentGone = m.entryID
	}
	m.showEntry()
}

// entryGoneNote says that journal entry id is no longer unknown, and
// which entry is under the cursor now.
func entryGoneNote(id string, es []*api.JournalEntry, row int) string {
	s := "entry " + id + " is no longer unknown (resolved elsewhere, or its outcome came)"
	if row < len(es) {
		s += ": entry " + es[row].ID + " is under the cursor now, read it"
	}
	return s
}

func (m *consoleModel) journalKey(k string) (tea.Model, tea.Cmd) {
	es := m.refresh.unknown
	armed := m.arm()
	if m.moveRow(k, len(es)) {
		m.entryGone = ""
		m.showEntry()
		return m, nil
	}
	switch k {
	case "m", "n":
		if m.entryGone != "" {
			// The key was meant for the entry that went away.
			m.note = entryGoneNote(m.entryGone, es, m.row) + " before resolving it"
			m.entryGone = ""
			m.rearm()
			return m, nil
		}
		if m.row < len(es) && !armed {
			m.note = "entry " + es[m.row].ID + " just came under the cursor: read it first"
			return m, nil
		}
		if m.row < len(es) {
			a := api.ResolveArgs{ID: es[m.row].ID}
			if k == "n" {
				a.Result, a.Evidence = api.ResultNotStarted, "checked by hand, answered in postern approve"
			}
			gw := m.gw
			m.sent, m.sentGone = a.ID, ""
			return m, func() tea.Msg {
				e, err := gw.Resolve(context.Background(), a)
				if err != nil {
					return doneMsg{text: fmt.Sprintf("resolve %s: %v", a.ID, err), entry: a.ID}
				}
				return doneMsg{text: fmt.Sprintf("resolved %s: %s", a.ID, e.Status())}
			}
		}
	}
	return m, nil
}
