package notify_test

import (
	"strings"
	"testing"

	"github.com/postern/postern/internal/dbustest"
	"github.com/postern/postern/internal/notify"
)

// The session bus is what says which process answered a card: its daemon
// stamps each signal with its sender and names the sender's process. A
// bus whose daemon runs as another user could name any process, and is
// not used (package sessionbus tests the other addresses it refuses).
func TestBusOfAnotherUserRefused(t *testing.T) {
	addr := dbustest.StartAs(t, 65534)
	s := notify.New(addr, nil)
	defer s.Close()
	if _, err := s.Status(); err == nil || !strings.Contains(err.Error(), "uid 65534") {
		t.Fatalf("the bus of uid 65534 at %s was used: %v", addr, err)
	}
}
