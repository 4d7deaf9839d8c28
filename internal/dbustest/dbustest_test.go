package dbustest

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/postern/postern/internal/fataltest"
)

// A bus that cannot start fails the test with what dbus-daemon said.
func TestBusThatCannotStartSaysWhy(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	msg := fataltest.Run(t, func(t testing.TB) { Start(t, missing, nil) })
	if !strings.Contains(msg, "Failed to bind socket") {
		t.Fatalf("a bus that could not bind its socket failed the test with %q", msg)
	}
}
