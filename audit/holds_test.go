package audit

import (
	"errors"
	"os"
	"testing"
)

// Holds tells the same two things Open's refusal tells, and as it does:
// an anchor past the log's end, or one that names another record, is
// ErrBehindAnchor; the log's own end as Open found it (Found), although
// it is an entry a crash left unsealed and not a checkpoint, is held.
func TestHoldsAsOpenRefuses(t *testing.T) {
	tl := newTestSetup(t)
	var anchors []Anchor
	tl.cfg.OnCheckpoint = func(a Anchor) { anchors = append(anchors, a) }
	l := tl.open(t)
	mustAppend(t, l, ev(EventSign, "R1"))
	crashed := tl.bytes(t) // R1, unsealed
	crashedKey, err := os.ReadFile(tl.cfg.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, ev(EventSign, "R2"))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	last := anchors[len(anchors)-1]
	if err := os.WriteFile(tl.path, crashed, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tl.cfg.KeyFile, crashedKey, 0o600); err != nil {
		t.Fatal(err)
	}
	tl.cfg.OnCheckpoint = nil
	l = tl.open(t)
	defer l.Close()
	found := l.Found()
	if err := l.Holds(found); err != nil {
		t.Errorf("Holds(Found()) = %v, want nil: the log holds its own end", err)
	}
	if err := l.Holds(last); !errors.Is(err, ErrBehindAnchor) {
		t.Errorf("Holds(an anchor past the end) = %v, want ErrBehindAnchor", err)
	}
	other := Anchor{LogID: found.LogID, Seq: anchors[0].Seq, Link: last.Link}
	if err := l.Holds(other); !errors.Is(err, ErrBehindAnchor) {
		t.Errorf("Holds(an anchor of another record) = %v, want ErrBehindAnchor", err)
	}
}
