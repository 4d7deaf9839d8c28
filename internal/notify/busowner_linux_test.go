package notify_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/postern/postern/internal/dbustest"
	"github.com/postern/postern/internal/notify"
)

// The session bus is what says which process answered a card: its daemon
// stamps each signal with its sender and names the sender's process. A
// bus whose daemon runs as another user (one that took the address of the
// user's bus after it went: an abstract name, or a path in /tmp) could
// name any process, and is not used; nor is an address without a UNIX
// socket, whose daemon nothing identifies.
func TestBusOfAnotherUserRefused(t *testing.T) {
	addr := dbustest.StartAs(t, 65534)
	s := notify.New(addr, nil)
	defer s.Close()
	if _, err := s.Status(); err == nil || !strings.Contains(err.Error(), "uid 65534") {
		t.Fatalf("the bus of uid 65534 at %s was used: %v", addr, err)
	}
	for _, a := range []string{"tcp:host=127.0.0.1,port=1", "unixexec:path=/bin/true", "unix:tmpdir=/tmp"} {
		if _, err := notify.New(a, nil).Status(); !errors.Is(err, notify.ErrNoSocket) {
			t.Errorf("%s: %v, want %v", a, err, notify.ErrNoSocket)
		}
	}
}

// A runtime directory whose name holds what a D-Bus address reads as its
// own (",", ";", "%", a space) still leads to the bus in it: the address
// made from it escapes them.
func TestBusInAnOddlyNamedRuntimeDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a,b;c%41 d")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	dbustest.Start(t, dir, []string{"XDG_RUNTIME_DIR=" + dir})
	addr, err := notify.Address([]string{"XDG_RUNTIME_DIR=" + dir})
	if err != nil {
		t.Fatal(err)
	}
	s := notify.New(addr, nil)
	defer s.Close()
	if _, err := s.Status(); err != nil && !strings.Contains(err.Error(), "org.freedesktop.Notifications") {
		t.Fatalf("the bus at %s (address %s) was not reached: %v", dir, addr, err)
	}
}
