package inventory

import (
	"strings"
	"testing"
	"time"
)

// A login to a host of the inventory is approved by typing its name out
// (Card.Word), so that no reflex approves it: a new host named as an
// answer the consoles take ("o" for once, "s" for a session, "d" for a
// denial) is refused, in any case. A name "o", taken by hosts import from
// a line any program of the user's can plant in known_hosts for a
// production key, would make that login's typed word the key a person
// presses for once on every other card. A file that has such a name
// already is read as it is.
func TestNewNameIsNoConsoleAnswer(t *testing.T) {
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	var inv *Inventory
	for _, name := range []string{"o", "once", "s", "session", "d", "deny", "O", "Once"} {
		_, err := inv.With(name, ptr("production"), []Key{NewKey(newKey(t), "known_hosts x line 1", now)}, now)
		if err == nil || !strings.Contains(err.Error(), "answer") {
			t.Errorf("a new host named %q: %v, want refused as a console's answer", name, err)
		}
	}
	for _, name := range []string{"db", "o1", "oncehost", "s.example.com"} {
		if _, err := inv.With(name, nil, []Key{NewKey(newKey(t), "test", now)}, now); err != nil {
			t.Errorf("a new host named %q: %v", name, err)
		}
	}
	h := Host{Name: "o", Keys: []Key{NewKey(newKey(t), "test", now)}, Added: now, Changed: now}
	old := (&Inventory{hosts: []Host{h}}).Marshal()
	got, err := Parse(old)
	if err != nil {
		t.Fatalf("a file naming a host \"o\": %v", err)
	}
	if _, err := got.With("o", ptr(""), nil, now); err != nil {
		t.Errorf("changing the class of the host \"o\" the file has: %v", err)
	}
}
