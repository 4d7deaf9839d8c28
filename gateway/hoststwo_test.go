package gateway

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/inventory"
	"github.com/postern/postern/internal/syncbuf"
	"github.com/postern/postern/internal/xdg"
)

// Without a vault, two gateways may serve one state directory, as two
// ssh-agents serve one user (eval "$(postern agent)" in two terminals).
// A host added through one is kept by a change made through the other,
// and listed by both: each reads the file again before it lists or
// changes it, and says so in its log, since a file changed by any
// program of the user's is put in force so too.
func TestTwoGatewaysWithoutAVaultKeepEachOthersHosts(t *testing.T) {
	dir := gatewayHome(t)
	var log syncbuf.Buffer
	_, sock1, _ := runGatewayWith(t, dir, Options{Log: slog.New(slog.NewTextHandler(&log, nil))})
	_, sock2, _ := runGatewayWith(t, dir, Options{Socket: filepath.Join(dir, "xdg_runtime_dir", "other.sock")})
	ctx := context.Background()
	c1, c2 := api.NewClient(sock1), api.NewClient(sock2)
	if _, err := c1.AddHost(ctx, api.HostsAddArgs{Name: "prod-db-1", Keys: []api.HostKey{{Key: hostKeyLine(t), Source: "test"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.AddHost(ctx, api.HostsAddArgs{Name: "web-1", Keys: []api.HostKey{{Key: hostKeyLine(t), Source: "test"}}}); err != nil {
		t.Fatal(err)
	}
	inv, err := inventory.Load(filepath.Join(dir, "xdg_state_home", "postern", xdg.HostsFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := inv.Host("prod-db-1"); !ok || inv.Len() != 2 {
		t.Fatalf("the host inventory holds %d host(s) of the 2 added through two gateways: %v", inv.Len(), inv.Hosts())
	}
	res, err := c1.Hosts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hosts) != 2 {
		t.Fatalf("the first gateway lists %v, not the host the second added", res.Hosts)
	}
	if !strings.Contains(log.String(), "level=WARN msg=\"the host inventory file changed since this gateway read it") {
		t.Fatalf("the first gateway put a changed inventory file in force without a warning:\n%s", log.String())
	}
}
