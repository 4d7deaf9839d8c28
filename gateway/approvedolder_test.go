package gateway

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/postern/postern/internal/xdg"
)

// An approved configuration holding a value this postern refuses in a
// configuration file (one an older postern took, such as a known_hosts
// file named by a relative path) is still the approved one: a
// configuration file that loosens it waits for a card, where the approved
// copy was dropped as unreadable and the file, whatever it said, was
// taken as approved.
func TestApprovedCopyAnOlderPosternTookStaysApproved(t *testing.T) {
	dir := gatewayHome(t)
	state := makeStateDir(t, dir)
	older := "approval = \"per-call\"\nknown_hosts = [\"known_hosts\"]\n"
	if err := os.WriteFile(filepath.Join(state, xdg.ApprovedConfigFile), []byte(older), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(configFile(t, dir), []byte("approval = \"none\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g, _, _ := runGateway(t, dir)
	st := g.Status()
	if st.Config.Approval != "per-call" || !strings.Contains(strings.Join(st.Config.Pending, "; "), "approval: per-call → none") {
		t.Fatalf("approved %q, file approval = \"none\": approval %q in force, pending changes %q; want per-call in force and the change waiting for a card", older, st.Config.Approval, st.Config.Pending)
	}
}
