package main

// What the full-screen console shows: the title and tabs, the tab chosen
// (fitted to the window: console_layout.go), the last answer's note and
// the recent decisions.

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
)

func (m *consoleModel) View() tea.View {
	var b strings.Builder
	head := m.head()
	b.WriteString(head)
	above := lineCount(head) + 1 // and an empty line
	b.WriteString("\n")
	recent := -1 // lines of Recent shown: all
	switch m.tab {
	case tabCards:
		recent = m.viewCards(&b, above)
	case tabRuns:
		_, lines := m.runRows()
		switch {
		case m.refresh.sessErr != "":
			// Not "none": what was listed may live on.
			e := m.fit(m.refresh.sessErr)
			b.WriteString(e + "\n")
			above += lineCount(e)
		case len(lines) == 0:
			b.WriteString("no live runs or grants\n")
		}
		recent = m.viewRows(&b, lines, "runs and grants", above, "↑/↓ choose, r revokes (a run: all its grants)")
	case tabJournal:
		if m.refresh.jrnlErr != "" {
			e := m.fit(m.refresh.jrnlErr)
			b.WriteString(e + "\n")
			above += lineCount(e)
		}
		lines := make([]string, len(m.refresh.unknown))
		for i, e := range m.refresh.unknown {
			lines[i] = entryLine(e)
		}
		if len(m.refresh.unknown) == 0 && m.refresh.jrnlErr == "" {
			b.WriteString("no command with an unknown outcome\n")
		}
		help := "↑/↓ choose, m reads the entry's remote markers, n records that it did not start (after you checked the host)"
		if m.refresh.moreUnknown {
			help = fmt.Sprintf("the newest %d are listed, and there are more: postern journal list --status STATUS_UNKNOWN --limit 0 lists every one\n%s", journalShown, help)
		}
		recent = m.viewRows(&b, lines, "entries", above, help)
	}
	b.WriteString(m.noteText())
	if recent != 0 {
		b.WriteString("\nRecent:\n")
		b.WriteString(m.recentText(recent))
	}
	v := tea.NewView(b.String())
	v.AltScreen = true
	v.WindowTitle = fmt.Sprintf("postern approve (%d)", len(m.cards))
	return v
}

// fit wraps s to the window's width (console_wrap.go).
func (m *consoleModel) fit(s string) string { return wrap(s, m.width) }

// head is the title and the tabs, wrapped, each line ending in a newline.
func (m *consoleModel) head() string {
	s := m.refresh.sessions
	nruns, ngrants := 0, 0
	if s != nil {
		nruns, ngrants = len(s.Runs), len(s.Grants)
	}
	more := ""
	if m.refresh.moreUnknown {
		more = "+" // the tab lists the newest journalShown
	}
	tabs := []string{
		fmt.Sprintf("Cards (%d)", len(m.cards)),
		fmt.Sprintf("Runs and grants (%d/%d)", nruns, ngrants),
		fmt.Sprintf("Unknown commands (%d%s)", len(m.refresh.unknown), more),
	}
	var line strings.Builder
	for i, t := range tabs {
		if tab(i) == m.tab {
			t = tabOn.Render(" " + t + " ")
		} else {
			t = " " + t + " "
		}
		line.WriteString(t)
	}
	quit := "q"
	if p := m.prompt(); p != nil && p.word != "" && m.tab == tabCards {
		quit = "ctrl+c" // q is a letter of the name typed out (key)
	}
	// The keys on the title's line, which is short: the tabs' line fits
	// 80 columns, and a card a line more.
	keys := dimStyle.Render("   tab: next view, " + quit + ": quit")
	return m.fit(titleStyle.Render("postern approve")+"  "+m.conn+keys) + "\n" + m.fit(line.String()) + "\n"
}

// noteText is the last answer's note under the tab, after an empty line,
// wrapped, or "".
func (m *consoleModel) noteText() string {
	if m.note == "" {
		return ""
	}
	return "\n" + m.fit(warnStyle.Render(m.note)) + "\n"
}

// recentText is the newest recent decisions that fit n lines (-1: all),
// each wrapped, whole.
func (m *consoleModel) recentText(n int) string {
	var shown []string
	used := 0
	for i := len(m.recent) - 1; i >= 0; i-- {
		r := m.fit("  " + m.recent[i])
		if n >= 0 && used+lineCount(r) > n {
			break
		}
		used += lineCount(r)
		shown = append([]string{r}, shown...)
	}
	if len(shown) == 0 {
		return ""
	}
	return strings.Join(shown, "\n") + "\n"
}

func rowMark(on bool) string {
	if on {
		return "▶ "
	}
	return "  "
}

// viewCards writes the cards tab under above lines, fitted to the window
// (console_layout.go), and returns how many lines of Recent fit under it
// (-1: all).
func (m *consoleModel) viewCards(b *strings.Builder, above int) int {
	if len(m.cards) == 0 {
		b.WriteString("no pending cards: waiting\n")
		return -1
	}
	l := m.layoutUnder(above)
	for _, r := range l.rows {
		b.WriteString(r + "\n")
	}
	b.WriteString("\n" + l.text + "\n\n")
	b.WriteString(l.prompt)
	return l.recent
}

// viewRows writes the rows of the runs or journal tab, marked where
// selected, wrapped, and fitted to the window under above lines and over
// help (fitRows), then help (each of its lines wrapped); it returns how
// many lines of Recent fit.
func (m *consoleModel) viewRows(b *strings.Builder, lines []string, what string, above int, help string) int {
	rows := make([]string, len(lines))
	for i, l := range lines {
		rows[i] = m.fit(rowMark(i == m.row) + l)
	}
	hl := strings.Split(help, "\n")
	for i := range hl {
		hl[i] = m.fit(dimStyle.Render(hl[i]))
	}
	help = strings.Join(hl, "\n")
	recent := -1
	if m.height > 0 {
		rows, recent = fitRows(rows, m.row, m.height-above-1-lineCount(help)-lineCount(m.noteText()), what, m.width)
	}
	for _, r := range rows {
		b.WriteString(r + "\n")
	}
	b.WriteString("\n" + help + "\n")
	return recent
}

// cardRows are the list of pending cards, one line each: a request's
// mode, run, destination, age and time left, or a policy change.
func (m *consoleModel) cardRows() []string {
	rows := make([]string, len(m.cards))
	for i, c := range m.cards {
		left := c.Expires.Sub(m.now).Round(time.Second)
		age := m.now.Sub(c.Created).Round(time.Second)
		if c.PolicyChange() {
			// No run asks, and the card waits until it is answered.
			rows[i] = m.fit(fmt.Sprintf("%s%s  configuration change that loosens authority  age %s, no time limit", rowMark(i == m.sel), c.ID, age))
			continue
		}
		what := "destination unknown"
		if c.Destination != nil {
			what = "host key " + c.Destination.Fingerprint
			if len(c.Destination.Names) > 0 {
				what = shown(c.Destination.Names[0])
			}
		} else if c.Namespace != "" {
			what = "sign, namespace " + shownName(c.Namespace)
		}
		rows[i] = m.fit(fmt.Sprintf("%s%s  %s  %s → %s  age %s, %s left", rowMark(i == m.sel), c.ID, c.Mode, shownName(c.Run.Name), what, age, max(left, 0)))
	}
	return rows
}

// layout lays the cards tab out for the window.
func (m *consoleModel) layout() cardsLayout { return m.layoutUnder(lineCount(m.head()) + 1) }

// layoutUnder lays the cards tab out for the window, under above lines.
// The card describes the run a session would cover: the one marked,
// which the person may have moved from the one proposed.
func (m *consoleModel) layoutUnder(above int) cardsLayout {
	c := *m.current()
	if p := m.prompt(); p != nil && c.OffersSession() {
		c.Selected = p.subject
	}
	s := cardsScreen{rows: m.cardRows(), sel: m.sel, text: m.fit(c.Text()), prompt: m.promptText(false), cutPrompt: m.promptText(true),
		cutNote: m.fit(warnStyle.Render("⚠ the card goes on below: make this window taller to read it whole; until then it can only be denied")), width: m.width}
	return layCards(s, above, lineCount(m.noteText()), m.height)
}

// promptText is what goes under the selected card, wrapped: the runs a
// session could bind and the question; for a card cut to the window, that
// it can only be denied.
func (m *consoleModel) promptText(cut bool) string {
	p := m.prompt()
	switch {
	case p == nil:
		return ""
	case cut:
		return m.fit(titleStyle.Render(fmt.Sprintf("card %s: d denies it; make this window taller to approve it", p.card.ID))) + "\n"
	}
	// The runs to choose from, then an empty line; no empty line of its
	// own without them (the layout leaves one under the card).
	subjects := p.subjects()
	if subjects != "" {
		subjects += "\n"
	}
	return m.fit(subjects+titleStyle.Render(p.question())) + "\n"
}
