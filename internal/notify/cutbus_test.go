package notify

import (
	"testing"

	"github.com/postern/postern/internal/dbustest"
)

// A bus that ends a message in the padding between its header fields
// and its body (a daemon killed mid-write, or a program of the user's
// serving the socket) is a connection that failed: the service says so,
// and the process that holds it goes on. The D-Bus library's decoder
// panicked there, in a goroutine of its own, which ended the gateway.
func TestBusCutBeforeTheBodyIsAnError(t *testing.T) {
	s := New(dbustest.CutBus(t), nil)
	defer s.Close()
	if _, err := s.Status(); err == nil {
		t.Fatal("a bus that cut its answer short: no error")
	}
}
