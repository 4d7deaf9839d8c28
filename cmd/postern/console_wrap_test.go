package main

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/mattn/go-runewidth"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/gateway/api"
)

// The two counts of width terminals use: East Asian ambiguous characters
// and emoji as one column, or as two.
var (
	countNarrow = &runewidth.Condition{EastAsianWidth: false, StrictEmojiNeutral: true}
	countWide   = &runewidth.Condition{EastAsianWidth: true, StrictEmojiNeutral: false}
)

// checkFits fails t for a line of view wider than width columns under
// either count, and returns view's lines with each continuation ("↳ ")
// joined to the line it continues: what the person reads.
func checkFits(t *testing.T, view string, width int) string {
	t.Helper()
	var joined []string
	for _, l := range strings.Split(ansi.Strip(view), "\n") {
		if n, w := countNarrow.StringWidth(l), countWide.StringWidth(l); n > width || w > width {
			t.Errorf("a line of %d columns (%d where ambiguous characters are wide) in a window of %d: the terminal cuts it:\n%s", n, w, width, l)
		}
		if rest, ok := strings.CutPrefix(l, "↳ "); ok && len(joined) > 0 {
			joined[len(joined)-1] += rest
			continue
		}
		joined = append(joined, l)
	}
	return strings.Join(joined, "\n")
}

// checkCardWhole fails t for a line of card c that read, what a person
// reads of where, does not hold whole.
func checkCardWhole(t *testing.T, where, read string, c api.Card) {
	t.Helper()
	for _, line := range strings.Split(c.Text(), "\n") {
		if !strings.Contains(read, line) {
			t.Errorf("%s does not show the card's line whole:\n%s\nit shows:\n%s", where, line, read)
		}
	}
}

// longCard is a card whose requester made every string it controls long:
// the command, the key's comment, the chain of processes (with East
// Asian characters, ambiguous ones and emoji), the claimed command line.
func longCard() api.Card {
	c := floodCards(1)[0]
	c.Command = "rm -rf /srv/data/" + strings.Repeat("x", 90) + " /srv/keep/END-OF-COMMAND"
	c.Key.Comment = "key " + strings.Repeat("k", 50) + " END-OF-COMMENT"
	c.Requester = []approvals.ProcessView{{PID: 4121, Name: "ssh"}, {PID: 4000, Name: strings.Repeat("長", 20) + strings.Repeat("±", 20) + strings.Repeat("☺", 10) + "✅END"}, {PID: 3988, Name: "claude"}}
	c.Claim = []string{"ssh", "-o", "ProxyCommand=" + strings.Repeat("p", 80), "END-OF-CLAIM"}
	c.Covers = "this call only"
	return c
}

// A card line longer than the window (a long command, comment, chain or
// claim) is wrapped, each continuation marked, never cut: the person
// reads every line of the card whole.
func TestConsoleWrapsCardLines(t *testing.T) {
	m := newConsoleModel(nil, nil)
	m.Update(tea.WindowSizeMsg{Width: 40, Height: 200})
	c := longCard()
	m.Update(cardsMsg{c})
	read := checkFits(t, m.View().Content, 40)
	checkCardWhole(t, "the console", read, c)
	if !strings.Contains(read, "▶ C0  per-call") || !strings.Contains(read, "type prod-db-1 and Enter to approve this one use (d and Enter denies): ") {
		t.Errorf("the card's row or its question is not whole:\n%s", read)
	}
}

// The wrap fits the window whichever width the terminal gives East Asian
// ambiguous characters and emoji, one column or two: no line overflows.
func TestConsoleWrapFitsBothWidthCounts(t *testing.T) {
	for _, width := range []int{24, 40, 61} {
		m := newConsoleModel(nil, nil)
		m.Update(tea.WindowSizeMsg{Width: width, Height: 300})
		c := longCard()
		c.Requester[1].Name = strings.Repeat("±☺", 30) + "END"
		m.Update(cardsMsg{c})
		read := checkFits(t, m.View().Content, width)
		if !strings.Contains(read, strings.Repeat("±☺", 30)+"END") {
			t.Errorf("width %d: the chain is not shown whole:\n%s", width, read)
		}
	}
}

// The runs tab wraps its rows too: a run's long label is read whole, and
// the row a key acts on is still on screen.
func TestConsoleWrapsRunsRows(t *testing.T) {
	m := newConsoleModel(nil, nil)
	m.Update(tea.WindowSizeMsg{Width: 40, Height: 20})
	m.Update(tea.KeyPressMsg{Code: tea.KeyTab})
	var runs []api.RunState
	for i := range 12 {
		r := api.RunState{}
		r.ID, r.Name, r.PID = "R"+strings.Repeat("1", 4)+string(rune('a'+i)), "claude", 40+i
		r.Label = "label " + strings.Repeat("l", 30) + " END-" + string(rune('a'+i))
		runs = append(runs, r)
	}
	m.Update(refreshMsg{sessions: &api.SessionsResult{Runs: runs}})
	for range 7 {
		m.Update(tea.KeyPressMsg{Code: tea.KeyDown})
	}
	lines, taller := screen(m, 20)
	read := checkFits(t, strings.Join(lines, "\n"), 40)
	if taller || !strings.Contains(read, "▶ run R1111h  claude (pid 47)  0 grants, label \"label "+strings.Repeat("l", 30)+" END-h\"") ||
		!strings.Contains(read, "r revokes") {
		t.Fatalf("the runs tab in a window of 40×20 (taller %v):\n%s", taller, read)
	}
}

// wrap keeps every character and every escape sequence of a line, in
// order, whatever the width: the lines, continuation marks taken off,
// join back to the line.
func TestWrapKeepsEveryCharacter(t *testing.T) {
	line := "a \x1b[1mbold\x1b[0m ±長☺✅ e\u0301 " + strings.Repeat("z", 30) + " end "
	for width := 1; width <= 50; width++ {
		var back strings.Builder
		for i, l := range strings.Split(wrap(line, width), "\n") {
			if i > 0 && width > 2 {
				var ok bool
				if l, ok = strings.CutPrefix(l, contMark); !ok {
					t.Fatalf("width %d: a continuation without its mark: %q", width, l)
				}
			}
			back.WriteString(l)
		}
		if back.String() != line {
			t.Fatalf("width %d: %q wraps back to %q", width, line, back.String())
		}
	}
}

// The line console, printing cards to a terminal, wraps each line to the
// terminal's width too: a long card line is read whole, never cut.
func TestLineConsoleWrapsCards(t *testing.T) {
	var out strings.Builder
	p := &linePrinter{out: &out, width: 40, shown: map[string]bool{}}
	c := longCard()
	p.show(&api.CardsDelta{Seq: 1, Reset: true, Cards: []api.Card{c}})
	checkCardWhole(t, "the line console", checkFits(t, out.String(), 40), c)
}

// "postern approve --list" on a terminal wraps each line to its width.
func TestListWrapsCards(t *testing.T) {
	var out strings.Builder
	c := longCard()
	printCards(&out, []api.Card{c}, 40)
	checkCardWhole(t, "the list", checkFits(t, out.String(), 40), c)
}
