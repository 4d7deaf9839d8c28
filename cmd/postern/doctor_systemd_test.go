package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The systemd check reads the units as systemctl finds them (offline,
// from a home of the test's own): the socket unit alone enabled is a
// set-up that starts the agent, and a unit that is not installed is not
// taken for a user manager that does not answer.
func TestDoctorSystemdCheck(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	t.Setenv("SYSTEMD_OFFLINE", "1")
	units := filepath.Join(home, ".config", "systemd", "user")

	if f := systemdCheck(); f.Status != "info" || !strings.Contains(f.Detail, "not installed") || !strings.Contains(f.Fix, "make install") {
		t.Errorf("no units installed: %+v, want info saying they are not installed", f)
	}

	os.MkdirAll(filepath.Join(units, "sockets.target.wants"), 0o755)
	for _, name := range []string{"postern.service", "postern.socket"} {
		b, err := os.ReadFile(filepath.Join("../../contrib/systemd/user", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(units, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if f := systemdCheck(); f.Status != "info" || !strings.Contains(f.Detail, "disabled") {
		t.Errorf("units installed, none enabled: %+v", f)
	}
	if err := os.Symlink("../postern.socket", filepath.Join(units, "sockets.target.wants", "postern.socket")); err != nil {
		t.Fatal(err)
	}
	if f := systemdCheck(); f.Status != "ok" || !strings.Contains(f.Detail, "postern.socket enabled") {
		t.Errorf("the socket unit enabled: %+v, want ok", f)
	}
}
