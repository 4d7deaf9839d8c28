package main

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// At every width from 20 to 300 columns, a card the console lets the
// person approve is on screen whole with its question, and the view is
// no taller than the window, whose top (the title, which says whether
// the gateway is reached, and the tabs) the terminal would drop; the
// list of cards never says "0 more".
func TestConsoleNeverTallerThanTheWindow(t *testing.T) {
	var widths []int
	for w := 20; w <= 300; w += map[bool]int{true: 1, false: 9}[w < 60] {
		widths = append(widths, w)
	}
	for _, n := range []int{1, 3, 60} {
		cards := floodCards(n)
		for _, w := range widths {
			for h := 8; h <= 70; h += 2 {
				m := newConsoleModel(nil, nil)
				m.Update(tea.WindowSizeMsg{Width: w, Height: h})
				for i := range 8 {
					m.recentAdd(fmt.Sprintf("earlier answer %d", i))
				}
				m.Update(cardsMsg(cards))
				for range n - 1 {
					m.Update(tea.KeyPressMsg{Code: tea.KeyDown})
				}
				m.note = strings.Repeat("a note ", 20)
				if m.layout().cut {
					continue
				}
				lines, taller := screen(m, h)
				view := strings.Join(lines, "\n")
				if taller || strings.Contains(view, " 0 more cards") {
					t.Fatalf("%d cards in a window of %d×%d: a card that can be approved, in a view taller than the window (%v) or saying 0 more cards:\n%s", n, w, h, taller, m.View().Content)
				}
				for _, l := range strings.Split(wrap(cards[n-1].Text(), w)+"\n"+m.promptText(false), "\n") {
					if !strings.Contains(view, l) {
						t.Fatalf("%d cards in a window of %d×%d: %q, of the card or its question, is not on screen:\n%s", n, w, h, l, view)
					}
				}
			}
		}
	}
}
