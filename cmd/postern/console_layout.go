package main

// How the tabs fit a window. The terminal keeps the bottom of a view
// taller than the window and drops its top, which held the list of cards
// and, below it, the top of the card: its question, its command, the
// run's confinement; on the other tabs, the selected row a key acts on.
// Here the card and its prompt come first: the list is cut to the rows
// around the selected card, Recent goes, and a card that still does not
// fit is shown from its top down, says so, and cannot be approved until
// the window is tall enough to read it whole. The lists of the other tabs
// are cut to the rows around the selected one.

import (
	"fmt"
	"strings"
)

// headLines is what the console shows above a tab: the title, the tabs
// and an empty line.
const headLines = 3

// cardsLayout is the cards tab laid out for a window.
type cardsLayout struct {
	rows   []string // the list of cards, or the part around the selection
	text   string   // the selected card, whole or cut
	cut    bool     // the card does not fit: it cannot be approved
	recent int      // how many lines of Recent fit (-1: all)
}

// lineCount is the number of lines s takes, s ending in a newline or not.
func lineCount(s string) int {
	if s == "" {
		return 0
	}
	return strings.Count(strings.TrimSuffix(s, "\n"), "\n") + 1
}

// layCards lays out rows (one per card, sel the selected one), the
// selected card's text and its prompt (the lines below the card) for a
// window height lines tall (0: unknown, no limit), with note lines of
// notes under the tab.
func layCards(rows []string, sel int, text, prompt string, note, height int) cardsLayout {
	l := cardsLayout{rows: rows, text: text, recent: -1}
	if height <= 0 {
		return l
	}
	// Card and prompt: an empty line above the card, two below it.
	fixed := headLines + 1 + lineCount(text) + 2 + lineCount(prompt) + note
	room := height - fixed
	if room < 1 {
		// Not even the card: one row (the selected card's), the card
		// from its top, and a line that says it goes on.
		l.rows = rows[sel : sel+1]
		keep := max(lineCount(text)+room-2, 1)
		lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
		l.text = strings.Join(lines[:min(keep, len(lines))], "\n") + "\n" + warnStyle.Render("⚠ the card goes on below: make this window taller to read it whole; until then it can only be denied")
		l.cut, l.recent = true, 0
		return l
	}
	l.rows, l.recent = fitRows(rows, sel, room, "cards")
	return l
}

// fitRows fits rows to room lines, sel the selected row: all of them, or
// a window of rows with the selected one in it and a line that counts the
// others (what ↑/↓ scroll to). It also returns how many lines of Recent
// fit in what is left: its title and an empty line above it, then the
// newest lines.
func fitRows(rows []string, sel, room int, what string) ([]string, int) {
	if len(rows) <= room {
		return rows, max(room-len(rows)-2, 0)
	}
	n := max(room-1, 1)
	start := min(max(sel-n/2, 0), len(rows)-n)
	return append(append([]string(nil), rows[start:start+n]...), dimStyle.Render(fmt.Sprintf("  … %d more %s (↑/↓)", len(rows)-n, what))), 0
}
