package approvals

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"testing"
)

// FuzzCardBoard feeds a board changes as they come off the wire, JSON
// lines that may be anything: it never panics, refuses with ErrCardsGap
// every change that does not follow its step, and after each change it
// takes holds the step that change reached and the cards a plain map of
// them holds, oldest first.
func FuzzCardBoard(f *testing.F) {
	f.Add([]byte(`{"seq":3,"since":0,"reset":true,"cards":[{"id":"C1"},{"id":"C2"}]}
{"seq":5,"since":3,"cards":[{"id":"C3"}],"gone":["C1"]}
{"seq":6,"since":4,"gone":["C3"]}
{"seq":7,"since":5,"gone":["C9","C2","C2"]}`))
	f.Add([]byte(`{"seq":2,"reset":true,"cards":[{"id":"C2","created":"2026-01-01T00:00:02Z"},{"id":"C1","created":"2026-01-01T00:00:01Z"}]}
{"seq":3,"since":2,"cards":[{"id":"C0","created":"2026-01-01T00:00:00Z"},{"id":"C3","created":"2026-01-01T00:00:03Z"}]}
{"seq":4,"since":3,"cards":[{"id":"C3","created":"2026-01-01T00:00:00Z"},{"id":"C3","created":"2026-01-01T00:00:05Z","covers":"x"}]}`))
	f.Add([]byte(`{"seq":1,"since":1}`))
	f.Add([]byte(`{"seq":0,"reset":true,"cards":[{"id":""},{"id":""}]}
{"seq":0,"since":0,"gone":[""]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var b CardBoard
		ref := map[string]CardView{} // what the board must hold
		for line := range bytes.Lines(data) {
			var d CardsDelta
			if json.Unmarshal(line, &d) != nil {
				continue
			}
			before := b.Seq()
			err := b.Apply(&d)
			switch {
			case err == nil && b.Seq() != d.Seq:
				t.Fatalf("applied a change to %d and holds %d", d.Seq, b.Seq())
			case err != nil && !errors.Is(err, ErrCardsGap):
				t.Fatalf("refused with %v", err)
			case err != nil && b.Seq() != before:
				t.Fatalf("a refused change moved the board from %d to %d", before, b.Seq())
			case err != nil && d.Reset:
				t.Fatal("a snapshot was refused")
			}
			if err == nil {
				if d.Reset {
					clear(ref)
				}
				for _, id := range d.Gone {
					delete(ref, id)
				}
				for _, c := range d.Cards {
					ref[c.ID] = c
				}
			}
			want := slices.SortedFunc(maps.Values(ref), cardOrder)
			got := b.Cards()
			if len(got) != len(want) {
				t.Fatalf("the board holds %d cards, not %d", len(got), len(want))
			}
			for i := range got {
				g, _ := json.Marshal(got[i])
				w, _ := json.Marshal(want[i])
				if !bytes.Equal(g, w) {
					t.Fatalf("card %d on the board is\n%s\nnot\n%s", i, g, w)
				}
			}
		}
	})
}
