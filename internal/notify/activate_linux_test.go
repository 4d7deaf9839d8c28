package notify_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/postern/postern/internal/dbustest"
	"github.com/postern/postern/internal/notify"
	"github.com/postern/postern/internal/notify/notifytest"
)

// A notification daemon the session bus starts on demand (dunst and
// mako install a D-Bus service file, and run from the first
// notification) is a notification service: it is started, as the first
// notify-send starts it, where postern said that nothing owned the name,
// and cards went to no desktop, or were refused for want of an approver.
func TestServiceTheBusStartsIsReached(t *testing.T) {
	dunst, err := exec.LookPath("dunst")
	if err != nil {
		t.Fatalf("dunst is not installed (Debian package dunst; .ci/run installs it): %v", err)
	}
	dir := t.TempDir()
	display := ":" + notifytest.Xvfb(t, "-nolisten", "tcp")
	services := filepath.Join(dir, "data", "dbus-1", "services")
	if err := os.MkdirAll(services, 0o700); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "dunstrc")
	os.WriteFile(conf, []byte("[global]\n"), 0o600)
	log := filepath.Join(dir, "dunst.log")
	os.WriteFile(filepath.Join(services, "postern-test.notifications.service"), []byte(
		"[D-BUS Service]\nName=org.freedesktop.Notifications\nExec=/bin/sh -c 'exec "+dunst+" -config "+conf+" >"+log+" 2>&1'\n"), 0o600)
	addr := dbustest.Start(t, dir, []string{"PATH=" + os.Getenv("PATH"), "XDG_RUNTIME_DIR=" + dir, "DISPLAY=" + display,
		"XDG_DATA_HOME=" + filepath.Join(dir, "data"), "XDG_DATA_DIRS=" + filepath.Join(dir, "none")})
	s := notify.New(addr, nil)
	defer s.Close()
	st, err := s.Status()
	if st.PID > 0 {
		// Held by a pidfd: by the test's end the number may be another
		// process's.
		if p, err := os.FindProcess(st.PID); err == nil {
			t.Cleanup(func() { p.Signal(syscall.SIGTERM) })
		}
	}
	if err != nil || !st.Actions() || st.PID <= 0 {
		b, _ := os.ReadFile(log)
		t.Fatalf("a service the bus starts on demand: %+v, %v\n%s", st, err, b)
	}
}
