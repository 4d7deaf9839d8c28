package gateway

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/vault"
)

// A policy change card that goes down unanswered is recorded with why
// (policy_change_withdrawn): the file changed again and a new card shows
// it (replaced), or changed back and loosens nothing (no_longer_loosens).
// Without it, the log held a policy_change_pending with no outcome, which
// reads as a card still waiting, or one whose answer went unrecorded.
func TestWithdrawnPolicyCardIsRecorded(t *testing.T) {
	const strict = "approval = \"per-call\"\n"
	pass := []byte("withdraw pass")
	dir, cfg, vaultPath := sealedConfig(t, pass, strict)
	g, sock, stop := runGateway(t, dir)
	unlockGateway(t, sock, pass)
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		g.reloadConfig()
	}
	write("approval = \"none\"\n")
	write("approval = \"session\"\n")
	write(strict)
	if st := g.Status(); len(st.Config.Pending) != 0 {
		t.Fatalf("the file changed back, and changes still wait: %q", st.Config.Pending)
	}
	stop()

	var pending []string
	withdrawn := map[string]audit.Reason{}
	err := api.ReadAuditLog(filepath.Join(filepath.Dir(vaultPath), "audit.log"),
		func() (*vault.Vault, error) { return vault.Open(vaultPath, bytes.Clone(pass)) },
		api.AuditReadOptions{}, func(e api.AuditEvent) error {
			switch e.Type {
			case audit.EventPolicyChangePending:
				pending = append(pending, e.Card)
			case audit.EventPolicyChangeWithdrawn:
				withdrawn[e.Card] = e.Reason
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 2 {
		t.Fatalf("%d policy change cards recorded pending, want 2 (one per loosening file)", len(pending))
	}
	for i, want := range []audit.Reason{audit.ReasonPolicyReplaced, audit.ReasonNoLongerLoosens} {
		if got, ok := withdrawn[pending[i]]; !ok || got != want {
			t.Errorf("card %s (loosening %d): withdrawal recorded %v (%q), want %q; withdrawn: %v", pending[i], i+1, ok, got, want, withdrawn)
		}
	}
	if n := len(withdrawn); n != 2 || slices.Contains(pending, "") {
		t.Errorf("withdrawals %v of cards %v", withdrawn, pending)
	}
}
