package gateway

import (
	"path/filepath"
	"testing"

	"github.com/postern/postern/audit"
)

// The audit log names the upstream agent the gateway gates
// (gateway_started): a signature recorded with key_holder=upstream is
// then one of that agent's, where the log did not say which agent it was.
func TestUpstreamAgentIsRecorded(t *testing.T) {
	pass := []byte("upstream pass")
	dir := gatewayHome(t)
	vaultPath := initTestVault(t, pass)
	up := filepath.Join(dir, "upstream.sock")
	_, _, stop := runGatewayWith(t, dir, Options{Upstream: up})
	stop()
	if started := lastEvent(t, vaultPath, pass, audit.EventGatewayStarted); started == nil || started.Detail["upstream"] != up {
		t.Errorf("gateway_started does not name the upstream agent %s: %+v", up, started)
	}
}
