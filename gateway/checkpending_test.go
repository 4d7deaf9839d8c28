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

// A configuration file that was not put in force at its last reload (it
// does not parse) leaves the policy before it in force: postern check
// answers by that policy, and says why the file is not.
func TestCheckSaysTheFileWasNotPutInForce(t *testing.T) {
	g, cfg := sessionGateway(t)
	if err := os.WriteFile(cfg, []byte("approval = \"session\"\n[[rule]]\nkey = \"deploy-*\"\napproval = \"per-cal\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, g, "after a reload that failed", func(st api.Status) bool { return st.Config.Error != "" })
	res, err := g.opCheck(context.Background(), nil, api.CheckArgs{Key: "deploy-prod"})
	if err != nil {
		t.Fatal(err)
	}
	if r := res.(api.CheckResult); r.Mode != audit.ModeSession || !strings.Contains(r.ConfigError, cfg+":4:") {
		t.Fatalf("check after a reload that failed: %s, because %s; config error %q, want session and the file's error", r.Mode, r.Because, r.ConfigError)
	}
}
