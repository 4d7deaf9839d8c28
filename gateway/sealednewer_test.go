package gateway

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/syncbuf"
	"github.com/postern/postern/internal/vault"
)

// A host inventory a newer postern sealed into the vault, in a version of
// the sealed form this one does not read, is left as it is: neither the
// unlock nor a change of the inventory seals this gateway's over it, and
// the log says why, where the unlock sealed the file's inventory over it
// at once, so that going back to the newer postern found its own gone.
func TestNewerSealedValueIsNotSealedOver(t *testing.T) {
	pass := []byte("seal pass")
	dir := gatewayHome(t)
	vaultPath := initTestVault(t, pass)
	newer := []byte("postern-host-inventory 2\n{\"hosts\":[],\"zones\":{}}\n")
	v, err := vault.Open(vaultPath, pass)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.SetSecret(api.SecretHostInventory, newer); err != nil {
		t.Fatal(err)
	}
	if err := v.Save(); err != nil {
		t.Fatal(err)
	}
	v.Wipe()

	var log syncbuf.Buffer
	_, sock, stop := runGatewayWith(t, dir, Options{Log: slog.New(slog.NewTextHandler(&log, nil))})
	unlockGateway(t, sock, pass)
	if _, err := api.NewClient(sock).AddHost(context.Background(), api.HostsAddArgs{Name: "web-1", Keys: []api.HostKey{{Key: hostKeyLine(t), Source: "test"}}}); err != nil {
		t.Fatal(err)
	}
	stop()
	v, err = vault.Open(vaultPath, pass)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Wipe()
	if got := v.Secret(api.SecretHostInventory); string(got) != string(newer) {
		t.Fatalf("the host inventory a newer postern sealed was sealed over: %q", got)
	}
	if !strings.Contains(log.String(), "newer postern") {
		t.Fatalf("the log does not say why the inventory is not sealed:\n%s", log.String())
	}
}
