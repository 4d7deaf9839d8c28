package gateway

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/askpass"
	"github.com/postern/postern/internal/vault"
)

// The askpass program is an approver: the log says which one the gateway
// pinned as it started (gateway_started), and that askpass approvals went
// off when the program was found rewritten (askpass_changed), where both
// were only in the gateway's own log.
func TestAskpassPinAndChangeAreRecorded(t *testing.T) {
	pass := []byte("askpass pass")
	dir := gatewayHome(t)
	vaultPath := initTestVault(t, pass)
	prog := filepath.Join(dir, "askpass.sh")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\nexit 1\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	g, _, stop := runGatewayWith(t, dir, Options{Env: askpass.Env{"SSH_ASKPASS=" + prog, "SSH_ASKPASS_REQUIRE=force", "DISPLAY=:0"}})
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho yes\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if ok, err := g.askpass.Confirm(context.Background(), "allow?"); ok || err == nil {
		t.Fatalf("a rewritten askpass program was asked: %v, %v", ok, err)
	}
	stop()

	started := lastEvent(t, vaultPath, pass, audit.EventGatewayStarted)
	changed := lastEvent(t, vaultPath, pass, audit.EventAskpassChanged)
	if started == nil || started.Detail["askpass"] != prog {
		t.Errorf("gateway_started does not name the askpass program pinned: %+v", started)
	}
	if changed == nil || changed.Detail["path"] != prog || changed.Detail["error"] == "" {
		t.Errorf("askpass approvals turned off are not recorded: %+v", changed)
	}
}

// lastEvent reads the audit log beside the vault at vaultPath and
// returns its last event of type typ, nil when there is none.
func lastEvent(t *testing.T, vaultPath string, pass []byte, typ audit.EventType) *api.AuditEvent {
	t.Helper()
	var last *api.AuditEvent
	err := api.ReadAuditLog(filepath.Join(filepath.Dir(vaultPath), "audit.log"),
		func() (*vault.Vault, error) { return vault.Open(vaultPath, bytes.Clone(pass)) },
		api.AuditReadOptions{}, func(e api.AuditEvent) error {
			if e.Type == typ {
				last = &e
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return last
}
