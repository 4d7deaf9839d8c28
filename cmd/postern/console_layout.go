package main

// How the tabs fit a window. The terminal keeps the bottom of a view
// taller than the window and drops its top, which held the list of cards
// and, below it, the top of the card: its question, its command, the
// run's confinement; on the other tabs, the selected row a key acts on.
// Here the card and its prompt come first: the list is cut to the rows
// around the selected card (and goes, where not even that row fits with
// the line that counts the others: the tab counts the cards), Recent
// goes, and a card that still does not fit is shown from its top down,
// says so, and cannot be approved until the window is tall enough to
// read it whole. The lists of the other tabs
// are cut to the rows around the selected one. Every piece is wrapped to
// the window's width first (console_wrap.go), so a row or a line of the
// card may take several lines of the window: the layout counts lines.

import (
	"fmt"
	"strings"
)

// cardsLayout is the cards tab laid out for a window.
type cardsLayout struct {
	rows   []string // the list of cards, or the part around the selection
	text   string   // the selected card, whole or cut
	prompt string   // what goes under the card
	cut    bool     // the card does not fit: it cannot be approved
	recent int      // how many lines of Recent fit (-1: all)
}

// cardsScreen is what the cards tab shows, each piece wrapped to the
// window's width (a row or a line may take several lines of the window).
type cardsScreen struct {
	rows   []string // one per card
	sel    int      // the selected card's row
	text   string   // the selected card
	prompt string   // what goes under it
	// cutNote and cutPrompt replace the card's end and its prompt when
	// the card does not fit.
	cutNote, cutPrompt string
	width              int // the window's, which the line counting the rows not shown is wrapped to
}

// lineCount is the number of lines s takes, s ending in a newline or not.
func lineCount(s string) int {
	if s == "" {
		return 0
	}
	return strings.Count(strings.TrimSuffix(s, "\n"), "\n") + 1
}

// layCards lays out the cards tab s for a window height lines tall (0:
// unknown, no limit), under above lines and over note lines of notes.
func layCards(s cardsScreen, above, note, height int) cardsLayout {
	l := cardsLayout{rows: s.rows, text: s.text, prompt: s.prompt, recent: -1}
	if height <= 0 {
		return l
	}
	// Card and prompt: an empty line above the card, two below it.
	room := height - (above + 1 + lineCount(s.text) + 2 + lineCount(s.prompt) + note)
	if room < 1 {
		// Not even the card: the selected card's row, the card from
		// its top, and a note that says it goes on.
		l.rows = s.rows[s.sel : s.sel+1]
		keep := max(height-(above+lineCount(l.rows[0])+1+lineCount(s.cutNote)+2+lineCount(s.cutPrompt)+note), 1)
		lines := strings.Split(strings.TrimSuffix(s.text, "\n"), "\n")
		l.text = strings.Join(lines[:min(keep, len(lines))], "\n") + "\n" + s.cutNote
		l.prompt, l.cut, l.recent = s.cutPrompt, true, 0
		return l
	}
	if linesOf(s.rows) > room && lineCount(s.rows[s.sel])+lineCount(moreRows(len(s.rows)-1, "cards", s.width)) > room {
		// Not even the selected card's row and the line that counts
		// the others: the card below is that row, and the tab counts
		// the cards.
		l.rows, l.recent = nil, 0
		return l
	}
	l.rows, l.recent = fitRows(s.rows, s.sel, room, "cards", s.width)
	return l
}

// linesOf is the number of lines rows take.
func linesOf(rows []string) int {
	n := 0
	for _, r := range rows {
		n += lineCount(r)
	}
	return n
}

// moreRows is the line that counts n rows of a list not shown, wrapped
// to width.
func moreRows(n int, what string, width int) string {
	return wrap(dimStyle.Render(fmt.Sprintf("  … %d more %s (↑/↓)", n, what)), width)
}

// fitRows fits rows (each one line or more) to room lines, sel the
// selected row: all of them, or the rows around the selected one and a
// line that counts the others (what ↑/↓ scroll to), wrapped to width. The
// selected row is shown even where it does not fit with that line. It
// also returns how many lines of Recent fit in what is left: its title
// and an empty line above it, then the newest lines.
func fitRows(rows []string, sel, room int, what string, width int) ([]string, int) {
	total := linesOf(rows)
	if total <= room {
		return rows, max(room-total-2, 0)
	}
	// The line that counts the others takes as many lines as it does
	// counting them all, at most.
	room -= lineCount(moreRows(len(rows), what, width))
	// From the selected row, a row below, then one above, while they fit.
	start, end, used := sel, sel+1, lineCount(rows[sel])
	for grew := true; grew; {
		grew = false
		if end < len(rows) && used+lineCount(rows[end]) <= room {
			used += lineCount(rows[end])
			end++
			grew = true
		}
		if start > 0 && used+lineCount(rows[start-1]) <= room {
			start--
			used += lineCount(rows[start])
			grew = true
		}
	}
	return append(append([]string(nil), rows[start:end]...), moreRows(len(rows)-(end-start), what, width)), 0
}
