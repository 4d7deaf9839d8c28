package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/inventory"
	"github.com/postern/postern/internal/vault"
)

// The host inventory's file is, like the approved configuration, a file
// any program of the user's outside every sandbox can rewrite while the
// gateway is stopped: a production host's key given a harmless name and
// no class would read harmless on its cards, and its per-call rule would
// ask nothing. The gateway reads the file at start only, so with a vault
// the inventory is also sealed into it: after every change (which is
// refused while the vault is locked, since it could not be sealed) and,
// when none is sealed yet, at the first unlock. At each unlock the sealed
// one wins: a file that differs is kept aside (hosts.json.rewritten), the
// sealed inventory is written back and put in force, policy_restored is
// recorded and status says so. A vault is locked at start, so no vault
// key signs before that comparison. With no vault there is nothing to
// seal into, and the file is all there is.

// sealedHostsPrefix starts the sealed value, so that an empty inventory
// is told from none sealed.
const sealedHostsPrefix = "postern-host-inventory 1\n"

// hostsChangeable reports whether the inventory may change now: with a
// vault, only while it is unlocked.
func (g *Gateway) hostsChangeable() error {
	if st, _ := g.vault.State(); st == api.VaultLocked {
		return fmt.Errorf("%w: the host inventory is sealed into it, so it changes only while it is unlocked", errVaultLocked)
	}
	return nil
}

// sealHosts seals the inventory in force into the vault, if it is
// unlocked (otherwise it does nothing). Seals are serialized, each
// taking the inventory in force when it runs, so the last one seals the
// latest change. A damaged file is never sealed over: its inventory in
// force is an empty stand-in.
func (g *Gateway) sealHosts() {
	g.sealHostsMu.Lock()
	defer g.sealHostsMu.Unlock()
	g.hostsMu.Lock()
	g.mu.Lock()
	damaged := g.hostsErr != nil
	g.mu.Unlock()
	value := append([]byte(sealedHostsPrefix), g.engine.Hosts().Marshal()...)
	g.hostsMu.Unlock()
	if damaged {
		return
	}
	g.seal(api.SecretHostInventory, value, "the host inventory")
}

// adoptSealedHosts is called at unlock, with the vault v open and before
// its keys load: the inventory sealed in v is put in force, and written
// back over a file that differs.
func (g *Gateway) adoptSealedHosts(v *vault.Vault) {
	raw, ok := sealedIn(v, api.SecretHostInventory, sealedHostsPrefix, g.sealHosts)
	if !ok {
		return
	}
	sealed, err := inventory.Parse(raw)
	if err != nil {
		g.log.Error("the host inventory sealed in the vault does not parse; the file's stays in force", "err", err)
		return
	}
	g.hostsMu.Lock()
	defer g.hostsMu.Unlock()
	g.mu.Lock()
	damaged := g.hostsErr != nil
	g.mu.Unlock()
	if !damaged && bytes.Equal(g.engine.Hosts().Marshal(), sealed.Marshal()) {
		return
	}
	aside := freeName(g.hostsPath + ".rewritten")
	if err := os.Rename(g.hostsPath, aside); err != nil && !errors.Is(err, os.ErrNotExist) {
		g.log.Warn("cannot keep the rewritten host inventory aside", "err", err)
	}
	if err := sealed.Save(g.hostsPath); err != nil {
		g.log.Warn("cannot write back the host inventory sealed in the vault; it is in force all the same", "err", err)
	}
	g.engine.SetHosts(sealed)
	g.mu.Lock()
	g.hostsErr = nil
	g.hostsRestored = "the host inventory file was not the one sealed in the vault; the vault's was put back at " + time.Now().UTC().Format(time.RFC3339) + ", the file found kept at " + aside
	g.mu.Unlock()
	g.log.Warn("the host inventory file is not the one sealed in the vault: the vault's is put back and in force", "path", g.hostsPath, "kept_at", aside)
	g.engine.Record(audit.Event{Type: audit.EventPolicyRestored, Detail: map[string]string{"path": g.hostsPath, "kept_at": aside}})
}

// freeName is name, or, when something is there already (a file kept
// aside before, which the person may not have looked at yet), name.2,
// name.3, … : the first free one. One gateway serves a vault (it holds
// the vault's audit log), so the name stays free until it is used.
func freeName(name string) string {
	for n := 1; ; n++ {
		try := name
		if n > 1 {
			try = name + "." + strconv.Itoa(n)
		}
		if _, err := os.Lstat(try); err != nil {
			return try // free, or nothing to see there: the rename says
		}
	}
}
