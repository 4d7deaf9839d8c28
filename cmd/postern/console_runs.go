package main

// The runs and grants tab of the full-screen console: the live runs,
// then the grants, and r, which revokes the row under the cursor.

import (
	"context"
	"fmt"
	"slices"

	tea "charm.land/bubbletea/v2"
)

// runRows are the revocable rows of the runs tab: runs, then grants.
func (m *consoleModel) runRows() (ids, lines []string) {
	s := m.refresh.sessions
	if s == nil {
		return nil, nil
	}
	for _, r := range s.Runs {
		line := fmt.Sprintf("run %s  %s  %s", r.ID, runProcess(r, false), plural(r.Grants, "grant"))
		if r.Label != "" {
			line += ", label " + shownName(r.Label)
		}
		line += noCards(r) + runConfinement(r)
		ids, lines = append(ids, r.ID), append(lines, line)
	}
	for _, g := range s.Grants {
		line := fmt.Sprintf("grant %s  run %s  key %s%s  since %s", g.ID, g.Run, g.Key.Fingerprint, grantScope(&g), g.Approved.Local().Format(timeLayout))
		ids, lines = append(ids, g.ID), append(lines, line)
	}
	return ids, lines
}

func (m *consoleModel) runsKey(k string) (tea.Model, tea.Cmd) {
	ids, _ := m.runRows()
	if m.moveRow(k, len(ids)) {
		m.runGone = ""
		m.chooseRow(ids)
		return m, nil
	}
	switch k {
	case "r":
		if m.runGone != "" {
			// The key was meant for the row that went away.
			m.note = rowGoneNote(m.runGone, ids, m.row) + " before revoking it"
			m.runGone = ""
			return m, nil
		}
		if m.row < len(ids) {
			id, gw := ids[m.row], m.gw
			m.sent = id
			return m, func() tea.Msg {
				n, err := gw.Revoke(context.Background(), id)
				if err != nil {
					return doneMsg{text: fmt.Sprintf("revoke %s: %v", id, err)}
				}
				return doneMsg{text: fmt.Sprintf("revoked %s (%s)", id, plural(n, "grant"))}
			}
		}
	}
	return m, nil
}

// chooseRow notes the row under the cursor of the runs tab, of ids.
func (m *consoleModel) chooseRow(ids []string) {
	m.runID = ""
	if m.row < len(ids) {
		m.runID = ids[m.row]
	}
}

// followRow keeps the runs tab's cursor on the run or grant it was on
// after a refresh, wherever the row went in the list, so that r revokes
// what the person chose. When the row is gone (the run ended, the grant
// was revoked) the cursor stays where it was, the console says what is
// under it now, and the next r revokes nothing (runsKey).
func (m *consoleModel) followRow() {
	if m.tab != tabRuns {
		return
	}
	ids, _ := m.runRows()
	if i := slices.Index(ids, m.runID); i >= 0 {
		m.row = i
		return
	}
	if m.runID != "" && m.runID != m.sent {
		m.runGone = m.runID
		m.row = min(m.row, max(len(ids)-1, 0))
		m.note = rowGoneNote(m.runGone, ids, m.row)
	}
	m.chooseRow(ids)
}

// rowGoneNote says that row id of the runs tab is gone, and which row
// is under the cursor now.
func rowGoneNote(id string, ids []string, row int) string {
	s := id + " is gone (ended or revoked)"
	if row < len(ids) {
		s += ": " + ids[row] + " is under the cursor now, read it"
	}
	return s
}
