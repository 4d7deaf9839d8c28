package approvals

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// FuzzCardBoard feeds a board changes as they come off the wire, JSON
// lines that may be anything: it never panics, refuses with ErrCardsGap
// every change that does not follow its step, and after each change it
// takes holds the step that change reached.
func FuzzCardBoard(f *testing.F) {
	f.Add([]byte(`{"seq":3,"since":0,"reset":true,"cards":[{"id":"C1"},{"id":"C2"}]}
{"seq":5,"since":3,"cards":[{"id":"C3"}],"gone":["C1"]}
{"seq":6,"since":4,"gone":["C3"]}
{"seq":7,"since":5,"gone":["C9","C2","C2"]}`))
	f.Add([]byte(`{"seq":1,"since":1}`))
	f.Add([]byte(`{"seq":0,"reset":true,"cards":[{"id":""},{"id":""}]}
{"seq":0,"since":0,"gone":[""]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var b CardBoard
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
			seen := map[string]bool{}
			for _, c := range b.Cards() {
				if seen[c.ID] {
					t.Fatalf("card %q twice on the board", c.ID)
				}
				seen[c.ID] = true
			}
		}
	})
}
