// Package dbustest starts a private D-Bus session bus (dbus-daemon) for
// tests, and waits for names to appear on it. A missing dbus-daemon fails
// the test (Debian package dbus-daemon; .ci/run installs it).
package dbustest

import (
	"bufio"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dbus "github.com/keybase/dbus"
)

// Start starts dbus-daemon with its socket in dir and the environment
// env, and returns its address (the value of DBUS_SESSION_BUS_ADDRESS).
// It stops when the test ends.
func Start(t testing.TB, dir string, env []string) string {
	t.Helper()
	if _, err := exec.LookPath("dbus-daemon"); err != nil {
		t.Fatalf("dbus-daemon is not installed (Debian package dbus-daemon; .ci/run installs it): %v", err)
	}
	bus := exec.Command("dbus-daemon", "--session", "--nofork", "--nopidfile", "--print-address=1",
		"--address=unix:path="+filepath.Join(dir, "bus"))
	bus.Env = env
	out, err := bus.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := bus.Start(); err != nil {
		t.Fatalf("starting dbus-daemon: %v", err)
	}
	t.Cleanup(func() { bus.Process.Kill(); bus.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("dbus-daemon printed no address: %v", err)
	}
	return strings.TrimSpace(line)
}

// WaitForName waits until a client owns name on the bus at addr.
func WaitForName(addr, name string, limit time.Duration) error {
	conn, err := dbus.Connect(addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	deadline := time.Now().Add(limit)
	for {
		var owned bool
		err := conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, name).Store(&owned)
		if err == nil && owned {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not appear on the bus within %s (%v)", name, limit, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
