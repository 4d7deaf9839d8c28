package gateway

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/gateway/api"
)

// While a looser configuration waits for its card, a request gets the
// stricter of the approved policy and the file's, and postern check says
// so: it answers with the policy the gateway decides with, not with the
// file's alone.
func TestCheckWhileALooserChangeWaits(t *testing.T) {
	var cfg string
	g, _ := startGatewayWith(t, func(dir string) {
		cfg = configFile(t, dir)
		os.WriteFile(cfg, []byte("approval = \"session\"\n[[rule]]\nkey = \"deploy-*\"\napproval = \"per-call\"\n"), 0o600)
	})
	waitStatus(t, g, "at start", approvalIs("session"))
	if err := os.WriteFile(cfg, []byte("approval = \"session\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, g, "the rule's removal waits", func(st api.Status) bool { return len(st.Config.Pending) > 0 })

	for _, a := range []api.CheckArgs{{Key: "deploy-prod"}, {Key: "deploy-prod", Forwarded: true}} {
		res, err := g.opCheck(context.Background(), nil, a)
		if err != nil {
			t.Fatal(err)
		}
		r := res.(api.CheckResult)
		if r.Mode != audit.ModePerCall || !a.Forwarded && !strings.Contains(r.Because, "approved configuration") {
			t.Fatalf("check %+v while the removal of the per-call rule waits: %s, because %s; the gateway asks per-call, by the approved configuration", a, r.Mode, r.Because)
		}
	}
}
