package main

// What the full-screen console shows: the title and tabs, the tab chosen
// (fitted to the window: console_layout.go), the last answer's note and
// the recent decisions.

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
)

func (m *consoleModel) View() tea.View {
	var b strings.Builder
	b.WriteString(titleStyle.Render("postern approve") + "  " + m.conn + "\n")
	s := m.refresh.sessions
	nruns, ngrants := 0, 0
	if s != nil {
		nruns, ngrants = len(s.Runs), len(s.Grants)
	}
	tabs := []string{
		fmt.Sprintf("Cards (%d)", len(m.cards)),
		fmt.Sprintf("Runs and grants (%d/%d)", nruns, ngrants),
		fmt.Sprintf("Unknown commands (%d)", len(m.refresh.unknown)),
	}
	for i, t := range tabs {
		if tab(i) == m.tab {
			t = tabOn.Render(" " + t + " ")
		} else {
			t = " " + t + " "
		}
		b.WriteString(t)
	}
	b.WriteString(dimStyle.Render("   tab: next view, q: quit") + "\n\n")
	recent := -1 // lines of Recent shown: all
	switch m.tab {
	case tabCards:
		recent = m.viewCards(&b)
	case tabRuns:
		_, lines := m.runRows()
		if len(lines) == 0 {
			b.WriteString("no live runs or grants\n")
		}
		recent = m.viewRows(&b, lines, "runs and grants", 0)
		b.WriteString(dimStyle.Render("\n↑/↓ choose, r revokes (a run: all its grants)") + "\n")
	case tabJournal:
		above := 0
		if m.refresh.jrnlErr != "" {
			b.WriteString(m.refresh.jrnlErr + "\n")
			above = 1
		}
		lines := make([]string, len(m.refresh.unknown))
		for i, e := range m.refresh.unknown {
			lines[i] = entryLine(e)
		}
		recent = m.viewRows(&b, lines, "entries", above)
		if len(m.refresh.unknown) == 0 && m.refresh.jrnlErr == "" {
			b.WriteString("no command with an unknown outcome\n")
		}
		b.WriteString(dimStyle.Render("\n↑/↓ choose, m reads the entry's remote markers, n records that it did not start (after you checked the host)") + "\n")
	}
	if m.note != "" {
		b.WriteString("\n" + warnStyle.Render(m.note) + "\n")
	}
	if recent != 0 {
		b.WriteString("\nRecent:\n")
		shown := m.recent
		if recent > 0 && len(shown) > recent {
			shown = shown[len(shown)-recent:]
		}
		for _, r := range shown {
			b.WriteString("  " + r + "\n")
		}
	}
	v := tea.NewView(b.String())
	v.AltScreen = true
	v.WindowTitle = fmt.Sprintf("postern approve (%d)", len(m.cards))
	return v
}

func rowMark(on bool) string {
	if on {
		return "▶ "
	}
	return "  "
}

// viewCards writes the cards tab, fitted to the window (console_layout.go),
// and returns how many lines of Recent fit under it (-1: all).
func (m *consoleModel) viewCards(b *strings.Builder) int {
	if len(m.cards) == 0 {
		b.WriteString("no pending cards: waiting\n")
		return -1
	}
	l := m.layout()
	for _, r := range l.rows {
		b.WriteString(r + "\n")
	}
	b.WriteString("\n" + l.text + "\n\n")
	b.WriteString(m.promptText(l.cut))
	return l.recent
}

// viewRows writes the rows of the runs or journal tab, marked where
// selected and fitted to the window under above lines of the tab and
// over its help (fitRows), and returns how many lines of Recent fit.
func (m *consoleModel) viewRows(b *strings.Builder, lines []string, what string, above int) int {
	rows := make([]string, len(lines))
	for i, l := range lines {
		rows[i] = rowMark(i == m.row) + l
	}
	recent := -1
	if m.height > 0 {
		note := 0
		if m.note != "" {
			note = 2
		}
		rows, recent = fitRows(rows, m.row, m.height-headLines-above-2-note, what)
	}
	for _, r := range rows {
		b.WriteString(r + "\n")
	}
	return recent
}

// cardRows are the list of pending cards, one line each.
func (m *consoleModel) cardRows() []string {
	rows := make([]string, len(m.cards))
	for i, c := range m.cards {
		left := c.Expires.Sub(m.now).Round(time.Second)
		age := m.now.Sub(c.Created).Round(time.Second)
		what := "destination unknown"
		if c.Destination != nil {
			what = "host key " + c.Destination.Fingerprint
			if len(c.Destination.Names) > 0 {
				what = shown(c.Destination.Names[0])
			}
		} else if c.Namespace != "" {
			what = "sign, namespace " + shown(c.Namespace)
		}
		rows[i] = fmt.Sprintf("%s%s  %s  %s → %s  age %s, %s left", rowMark(i == m.sel), c.ID, c.Mode, shown(c.Run.Name), what, age, max(left, 0))
	}
	return rows
}

// layout lays the cards tab out for the window.
func (m *consoleModel) layout() cardsLayout {
	c := m.current()
	text := c.Text()
	if m.width > 0 {
		text = lipgloss.NewStyle().Width(m.width).Render(text)
	}
	note := 0
	if m.note != "" {
		note = 2
	}
	return layCards(m.cardRows(), m.sel, text, m.promptText(false), note, m.height)
}

// promptText is what goes under the selected card: the runs a session
// could bind and the question; for a card cut to the window, that it
// can only be denied.
func (m *consoleModel) promptText(cut bool) string {
	p := m.prompt()
	switch {
	case p == nil:
		return ""
	case cut:
		return titleStyle.Render(fmt.Sprintf("card %s: d denies it; make this window taller to approve it", p.card.ID)) + "\n"
	}
	return p.subjects() + "\n" + titleStyle.Render(p.question()) + "\n"
}
