package gateway

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/postern/postern/internal/syncbuf"
	"github.com/postern/postern/internal/xdg"
)

// An approved configuration that cannot be read (a FIFO, a directory, a
// link to a device in its place) is said in the log, naming it, as one
// that does not parse is: the configuration file is then taken as
// approved, which loosens what the approved one allowed without a card,
// where it was passed over without a word.
func TestUnreadableApprovedConfigIsLogged(t *testing.T) {
	dir := gatewayHome(t)
	state := makeStateDir(t, dir)
	approved := filepath.Join(state, xdg.ApprovedConfigFile)
	if err := syscall.Mkfifo(approved, 0o600); err != nil {
		t.Fatal(err)
	}
	var log syncbuf.Buffer
	runGatewayWith(t, dir, Options{Log: slog.New(slog.NewTextHandler(&log, nil))})
	if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), approved) {
		t.Fatalf("the approved configuration could not be read, and the log says nothing of it:\n%s", log.String())
	}
}

// makeStateDir makes the state directory of a gatewayHome, dir, before
// a gateway starts in it, and returns it.
func makeStateDir(t *testing.T, dir string) string {
	t.Helper()
	state := filepath.Join(dir, "xdg_state_home", "postern")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	return state
}
