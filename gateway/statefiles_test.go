package gateway

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/postern/postern/internal/xdg"
)

// A program with the person's uid can put anything where the gateway's
// state files were: a FIFO nobody writes to, a link to an endless device.
// The gateway starts all the same (os.ReadFile would have waited for
// ever, or read until memory ran out), and says which file it could not
// read.
func TestStateFilesThatAreNoFiles(t *testing.T) {
	g, _ := startGatewayWith(t, func(dir string) {
		state := filepath.Join(dir, "xdg_state_home", "postern")
		if err := os.MkdirAll(state, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(filepath.Join(state, xdg.HostsFile), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{xdg.ContextFile, xdg.BootIDFile, xdg.ApprovedConfigFile} {
			if err := os.Symlink("/dev/zero", filepath.Join(state, f)); err != nil {
				t.Fatal(err)
			}
		}
	})
	if st := g.Status(); !strings.Contains(st.Hosts.Error, "not a regular file") {
		t.Fatalf("hosts: %+v", st.Hosts)
	}
}
