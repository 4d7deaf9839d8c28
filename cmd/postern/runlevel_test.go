package main

import (
	"strings"
	"testing"

	"github.com/postern/postern/internal/confine"
)

// A confined run that shares the terminal it was started from (no
// pseudo-terminal could be made) tells the gateway so, and the card
// shows it, where only a warning on the launching terminal's standard
// error said it.
func TestConfinedRunSharingItsTerminalSaysSo(t *testing.T) {
	r := &confine.Run{Level: confine.Level{Namespaces: true, Landlock: 7}}
	if l := (confinedRun{r: r}).level(); l.SharedTerminal {
		t.Fatalf("a run with a terminal of its own reports %+v", l)
	}
	l := (confinedRun{r: r, shared: true}).level()
	if !l.SharedTerminal || !strings.Contains(l.String(), "sharing the terminal it was started from") {
		t.Fatalf("a run sharing its terminal reports %+v: %q", l, l.String())
	}
}
