package notifytest

import (
	"os"
	"testing"
)

// An X server a test started is stopped at the test's end as it stops
// itself: its socket in /tmp/.X11-unix, outside the test's directory, is
// gone with it (an X server killed outright leaves it there).
func TestXvfbLeavesNoSocket(t *testing.T) {
	var socket string
	t.Run("x", func(t *testing.T) {
		socket = "/tmp/.X11-unix/X" + Xvfb(t, "-nolisten", "tcp")
		if _, err := os.Stat(socket); err != nil {
			t.Fatalf("the X server's socket: %v", err)
		}
	})
	if _, err := os.Stat(socket); err == nil {
		os.Remove(socket)
		t.Errorf("%s is left after the test that started its X server", socket)
	}
}
