// Package keychaintest starts a throwaway Secret Service for tests: a
// private D-Bus session bus (dbus-daemon) with gnome-keyring-daemon on
// it, its keyring unlocked, all under a temporary directory. A test that
// needs the OS keychain calls SessionBus and points the code under test
// at the address it returns; a missing program fails the test (Debian
// packages dbus-daemon and gnome-keyring, which .ci/run installs).
package keychaintest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dbus "github.com/keybase/dbus"
)

// SessionBus starts dbus-daemon and gnome-keyring-daemon for the test and
// returns the bus address (the value of DBUS_SESSION_BUS_ADDRESS). Both
// stop when the test ends.
func SessionBus(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"dbus-daemon", "gnome-keyring-daemon"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("%s is not installed (Debian packages dbus-daemon and gnome-keyring; .ci/run installs them): %v", p, err)
		}
	}
	dir, err := os.MkdirTemp("", "keychaintest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, d := range []string{"home", "data", "run"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(dir, "home"),
		"XDG_DATA_HOME=" + filepath.Join(dir, "data"),
		"XDG_RUNTIME_DIR=" + filepath.Join(dir, "run"),
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
	addr := strings.TrimSpace(line)
	env = append(env, "DBUS_SESSION_BUS_ADDRESS="+addr)

	keyring := exec.Command("gnome-keyring-daemon", "--foreground", "--unlock", "--components=secrets")
	keyring.Env = env
	keyring.Stdin = strings.NewReader("test-password")
	if err := keyring.Start(); err != nil {
		t.Fatalf("starting gnome-keyring-daemon: %v", err)
	}
	t.Cleanup(func() { keyring.Process.Kill(); keyring.Wait() })
	if err := waitForName(addr, "org.freedesktop.secrets", 30*time.Second); err != nil {
		t.Fatalf("gnome-keyring-daemon: %v", err)
	}
	return addr
}

// waitForName waits until a client owns name on the bus at addr.
func waitForName(addr, name string, limit time.Duration) error {
	conn, err := dbus.Dial(addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.Auth(nil); err != nil {
		return err
	}
	if err := conn.Hello(); err != nil {
		return err
	}
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
