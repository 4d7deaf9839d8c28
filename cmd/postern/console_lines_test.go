package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/postern/postern/gateway/api"
)

// The line console prints each card once, when it first comes, and says
// when a card it printed goes away: from a change's gone list, or from a
// snapshot that lacks it (after a missed change or a reconnection).
func TestLinePrinterPrintsEachChangeOnce(t *testing.T) {
	card := func(id string) api.Card { c := sessionCard(); c.ID = id; return c }
	var out strings.Builder
	p := &linePrinter{out: &out, shown: map[string]bool{}}
	step := func(d api.CardsDelta, want ...string) {
		t.Helper()
		out.Reset()
		p.show(&d)
		var got []string
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.HasPrefix(l, "Card ") || strings.HasSuffix(l, ": closed") {
				got = append(got, l)
			}
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("printed %q, want %q\n%s", got, want, out.String())
		}
	}
	step(api.CardsDelta{Seq: 2, Reset: true, Cards: []api.Card{card("C1")}}, "Card C1, ")
	step(api.CardsDelta{Seq: 3, Since: 2, Cards: []api.Card{card("C1"), card("C2")}}, "Card C2, ")
	step(api.CardsDelta{Seq: 4, Since: 3, Gone: []string{"C1", "C9"}}, "C1: closed")
	step(api.CardsDelta{Seq: 9, Reset: true, Cards: []api.Card{card("C3")}}, "Card C3, ", "C2: closed")

	out.Reset()
	var errw strings.Builder
	p = &linePrinter{out: &out, errw: &errw, asJSON: true, shown: map[string]bool{}}
	p.show(&api.CardsDelta{Seq: 2, Reset: true, Cards: []api.Card{card("C1")}})
	p.show(&api.CardsDelta{Seq: 3, Since: 2, Gone: []string{"C1"}})
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	var c api.Card
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &c) != nil || c.ID != "C1" {
		t.Fatalf("JSON lines: %q", out.String())
	}
	if errw.String() != "C1: closed\n" {
		t.Fatalf("a JSON console said on standard error %q", errw.String())
	}
}

// A change the gateway sends in parts (too large for a line) reaches the
// consoles whole: a snapshot in three parts reports no card closed that
// is in a later part, and shows each card once.
func TestAChangeInPartsIsShownWhole(t *testing.T) {
	card := func(id string) api.Card { c := sessionCard(); c.ID = id; return c }
	var out strings.Builder
	p := &linePrinter{out: &out, shown: map[string]bool{"C2": true, "C9": true}}
	var whole, done *api.CardsDelta
	for i, part := range []api.CardsDelta{
		{Seq: 7, Reset: true, Cards: []api.Card{card("C1")}, More: true},
		{Seq: 7, Since: 7, Cards: []api.Card{card("C2")}, More: true},
		{Seq: 7, Since: 7, Cards: []api.Card{card("C3")}},
	} {
		if done, whole = joinParts(whole, &part); (done != nil) != (i == 2) {
			t.Fatalf("part %d: whole %v", i, done != nil)
		}
	}
	p.show(done)
	if got := out.String(); strings.Contains(got, "C2: closed") || !strings.Contains(got, "C9: closed") || strings.Count(got, "Card C") != 2 {
		t.Fatalf("the change in parts printed:\n%s", got)
	}
}
