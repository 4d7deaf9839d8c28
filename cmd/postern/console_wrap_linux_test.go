package main

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/postern/postern/internal/ptyrelay"
)

// A terminal's width is read through the writer run gives each command,
// which checks its writes: approve --line wraps cards to it.
func TestTermWidthOfTheCommandsOutput(t *testing.T) {
	master, peer, err := ptyrelay.OpenPair()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer peer.Close()
	if err := unix.IoctlSetWinsize(int(peer.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 97}); err != nil {
		t.Fatal(err)
	}
	if got := termWidth(&checkedWriter{w: peer}); got != 97 {
		t.Fatalf("the width of a 97-column terminal, through the command's writer: %d", got)
	}
}
