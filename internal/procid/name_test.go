package procid

import (
	"strings"
	"testing"
)

// A process whose executable does not show is named by its comm, which
// it sets itself: its name says so, and never reads as the name of a
// program the gateway saw.
func TestNameOfAHiddenProgramIsMarked(t *testing.T) {
	p := Process{PID: 4121, Comm: "ssh", Exe: Exe{Hidden: true}}
	if n := p.Name(); n == "ssh" || !strings.Contains(n, "ssh") {
		t.Fatalf("a process whose executable is hidden, calling itself ssh, is named %q", n)
	}
	shown := Process{PID: 4121, Comm: "anything", Exe: Exe{Path: "/usr/bin/ssh"}}
	if n := shown.Name(); n != "ssh" {
		t.Fatalf("a process executing /usr/bin/ssh is named %q", n)
	}
}
