// Package keychaintest starts a throwaway Secret Service for tests: a
// private D-Bus session bus (dbus-daemon) with gnome-keyring-daemon on
// it, its keyring unlocked, all under a temporary directory. A test that
// needs the OS keychain calls SessionBus and points the code under test
// at the address it returns; a missing program fails the test (Debian
// packages dbus-daemon and gnome-keyring, which .ci/run installs).
package keychaintest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/postern/postern/internal/dbustest"
)

// SessionBus starts dbus-daemon and gnome-keyring-daemon for the test and
// returns the bus address (the value of DBUS_SESSION_BUS_ADDRESS). Both
// stop when the test ends.
func SessionBus(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"gnome-keyring-daemon"} {
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

	addr := dbustest.Start(t, dir, env)
	env = append(env, "DBUS_SESSION_BUS_ADDRESS="+addr)

	keyring := exec.Command("gnome-keyring-daemon", "--foreground", "--unlock", "--components=secrets")
	keyring.Env = env
	keyring.Stdin = strings.NewReader("test-password")
	if err := keyring.Start(); err != nil {
		t.Fatalf("starting gnome-keyring-daemon: %v", err)
	}
	t.Cleanup(func() { keyring.Process.Kill(); keyring.Wait() })
	if err := dbustest.WaitForName(addr, "org.freedesktop.secrets", 30*time.Second); err != nil {
		t.Fatalf("gnome-keyring-daemon: %v", err)
	}
	return addr
}
