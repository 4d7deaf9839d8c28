package sessionbus_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/postern/postern/internal/dbustest"
	"github.com/postern/postern/internal/sessionbus"
)

// A bus whose daemon runs as another user (one that took the address of
// the user's bus after it went: an abstract name, or a path in /tmp) is
// not used; nor is an address without a UNIX socket, whose daemon
// nothing identifies.
func TestBusOfAnotherUserRefused(t *testing.T) {
	addr := dbustest.StartAs(t, 65534)
	if c, err := sessionbus.Connect(addr, 5*time.Second); err == nil || !strings.Contains(err.Error(), "uid 65534") {
		if c != nil {
			c.Close()
		}
		t.Fatalf("the bus of uid 65534 at %s was used: %v", addr, err)
	}
	for _, a := range []string{"tcp:host=127.0.0.1,port=1", "unixexec:path=/bin/true", "unix:tmpdir=/tmp"} {
		if _, err := sessionbus.Connect(a, 5*time.Second); !errors.Is(err, sessionbus.ErrNoSocket) {
			t.Errorf("%s: %v, want %v", a, err, sessionbus.ErrNoSocket)
		}
	}
}

// Without $DBUS_SESSION_BUS_ADDRESS and with no socket in the runtime
// directory there is no bus; none is launched.
func TestNoBus(t *testing.T) {
	for _, env := range [][]string{nil, {"XDG_RUNTIME_DIR=" + t.TempDir()}, {"DBUS_SESSION_BUS_ADDRESS=autolaunch:"}} {
		if a, err := sessionbus.Address(env); !errors.Is(err, sessionbus.ErrNoBus) {
			t.Errorf("%q: %q, %v; want %v", env, a, err, sessionbus.ErrNoBus)
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
	addr, err := sessionbus.Address([]string{"XDG_RUNTIME_DIR=" + dir})
	if err != nil {
		t.Fatal(err)
	}
	c, err := sessionbus.Connect(addr, 5*time.Second)
	if err != nil {
		t.Fatalf("the bus at %s (address %s) was not reached: %v", dir, addr, err)
	}
	c.Close()
}

// A bus that cuts its answer to Hello short is an error.
func TestBusCutShort(t *testing.T) {
	if c, err := sessionbus.Connect(dbustest.CutBus(t), 5*time.Second); err == nil {
		c.Close()
		t.Fatal("a bus that cut its answer short: no error")
	}
}

// A bus that takes the connection and never answers is an error once
// the timeout has passed, not a hang.
func TestBusThatNeverAnswers(t *testing.T) {
	addr := dbustest.SilentBus(t)
	start := time.Now()
	if c, err := sessionbus.Connect(addr, 200*time.Millisecond); err == nil {
		c.Close()
		t.Fatal("a bus that never answered: no error")
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("Connect returned after %v", d)
	}
}
