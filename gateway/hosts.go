package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/inventory"
	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/xdg"
)

// The host inventory: the gateway owns its file, changes it only for an
// approver outside every run, records each change in the audit log, and
// puts it in force for the decisions that follow.

// loadHosts reads the inventory at start. A damaged file is not fatal: the
// gateway runs with an empty inventory, in which no host has a name (every
// login is then asked about as strictly as any host rule could ask), and
// status says why. Nor is it ever overwritten: "postern hosts" reads it
// again at each call (see currentHosts), and fails, changes included,
// until the person has mended it or moved it aside.
func (g *Gateway) loadHosts() *inventory.Inventory {
	g.hostsPath = filepath.Join(g.stateDir, xdg.HostsFile)
	inv, err := inventory.Load(g.hostsPath)
	if err != nil {
		g.hostsErr = err
		g.log.Error("host inventory not read: no host has a name until it is fixed", "path", g.hostsPath, "err", err)
		return &inventory.Inventory{}
	}
	return inv
}

// errHostsDamaged refuses to list or change a host inventory whose file
// could not be read.
var errHostsDamaged = errors.New("the host inventory file cannot be read")

// currentHosts returns the inventory in force. While its file could not
// be read, it reads it again first: mended, or moved aside (then there is
// none), it is put in force; still damaged, the error says so, and the
// file stays as it is. g.hostsMu held.
//
// Without a vault the file is read again every time too, and put in
// force if it changed: several gateways may serve one state directory
// then, as several ssh-agents serve one user (OpenSSH's own tests start
// them so), and a change made through one would otherwise be written
// over by the next change made through another. With a vault one gateway
// serves it (its audit log's lock), and a file changed under it is not
// taken: the sealed inventory is put back at the next unlock
// (sealedhosts.go).
func (g *Gateway) currentHosts() (*inventory.Inventory, error) {
	g.mu.Lock()
	damaged := g.hostsErr != nil
	g.mu.Unlock()
	st, _ := g.vault.State()
	if !damaged && st != api.VaultNone {
		return g.engine.Hosts(), nil
	}
	inv, err := inventory.Load(g.hostsPath)
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil {
		g.hostsErr = err
		return nil, fmt.Errorf("%w (%s: %v): no host has a name until it is mended or moved aside; postern does not overwrite it", errHostsDamaged, g.hostsPath, err)
	}
	g.hostsErr = nil
	if !damaged && bytes.Equal(inv.Marshal(), g.engine.Hosts().Marshal()) {
		return g.engine.Hosts(), nil
	}
	g.engine.SetHosts(inv)
	if damaged {
		g.log.Info("host inventory read again", "path", g.hostsPath, "hosts", inv.Len())
	} else {
		// Another gateway's change, or any program of the user's: with
		// no vault, nothing seals the file.
		g.log.Warn("the host inventory file changed since this gateway read it: the file is in force now (a vault would seal it)", "path", g.hostsPath, "hosts", inv.Len())
	}
	return inv, nil
}

func (g *Gateway) opHosts(context.Context, *procid.Peer, noArgs) (any, error) {
	g.hostsMu.Lock()
	defer g.hostsMu.Unlock()
	inv, err := g.currentHosts()
	if err != nil {
		return nil, err
	}
	return api.HostsResult{Hosts: inv.Hosts()}, nil
}

func (g *Gateway) opHostsAdd(_ context.Context, peer *procid.Peer, a api.HostsAddArgs) (any, error) {
	if err := inventory.CheckName(a.Name); err != nil {
		return nil, badRequest(err)
	}
	if a.Class != nil {
		if err := inventory.CheckClass(*a.Class); err != nil {
			return nil, badRequest(err)
		}
	}
	if len(a.Keys) == 0 && a.Class == nil {
		return nil, badRequest(fmt.Errorf("no key for %s", a.Name))
	}
	now := time.Now()
	keys := make([]inventory.Key, 0, len(a.Keys))
	var fps []string
	for _, k := range a.Keys {
		pub, _, _, _, err := ssh.ParseAuthorizedKey([]byte(k.Key))
		if err != nil {
			return nil, badRequest(fmt.Errorf("key %q: %w", k.Key, err))
		}
		nk := inventory.NewKey(pub, k.Source, now)
		keys = append(keys, nk)
		fps = append(fps, nk.Fingerprint)
	}
	return g.changeHosts(peer, "host inventory: add "+a.Name, func(inv *inventory.Inventory) (*inventory.Inventory, audit.Event, error) {
		prev, had := inv.Host(a.Name)
		if len(keys) == 0 && !had {
			// Only a host the inventory has changes class alone.
			return nil, audit.Event{}, fmt.Errorf("%w: %q: give its keys", inventory.ErrNoHost, a.Name)
		}
		next, err := inv.With(a.Name, a.Class, keys, now)
		switch {
		case errors.Is(err, inventory.ErrKeyTaken):
			// The inventory's state, not a mistake in the request.
			return nil, audit.Event{}, err
		case err != nil:
			return nil, audit.Event{}, badRequest(err)
		}
		h, _ := next.Host(a.Name)
		ev := audit.Event{Type: audit.EventHostAdded, Detail: map[string]string{
			"host": h.Name, "class": h.Class, "previous_class": prev.Class, "keys": strings.Join(fps, ","), "source": sources(a.Keys),
		}}
		return next, ev, nil
	})
}

func (g *Gateway) opHostsRemove(_ context.Context, peer *procid.Peer, a api.HostsRemoveArgs) (any, error) {
	return g.changeHosts(peer, "host inventory: remove "+a.Name, func(inv *inventory.Inventory) (*inventory.Inventory, audit.Event, error) {
		prev, _ := inv.Host(a.Name)
		next, err := inv.Without(a.Name)
		if err != nil {
			return nil, audit.Event{}, err
		}
		var fps []string
		for _, k := range prev.Keys {
			fps = append(fps, k.Fingerprint)
		}
		ev := audit.Event{Type: audit.EventHostRemoved, Detail: map[string]string{
			"host": prev.Name, "class": prev.Class, "keys": strings.Join(fps, ","),
		}}
		return next, ev, nil
	})
}

// changeHosts applies one change for approver: refused from inside a run,
// and while the vault is locked (sealedhosts.go); the new inventory is
// written, recorded in the audit log, put in force and sealed into the
// vault; if the record cannot be written, the file is put back and
// nothing changes.
func (g *Gateway) changeHosts(approver *procid.Peer, what string, change func(*inventory.Inventory) (*inventory.Inventory, audit.Event, error)) (any, error) {
	if err := g.engine.OutsideRuns(approver, what); err != nil {
		return nil, err
	}
	res, err := g.applyHostsChange(approver, what, change)
	if err == nil {
		// After hostsMu is let go: an unlock holds the vault while it
		// takes hostsMu (adoptSealedHosts).
		g.sealHosts()
	}
	return res, err
}

// applyHostsChange is changeHosts's change, under hostsMu.
func (g *Gateway) applyHostsChange(approver *procid.Peer, what string, change func(*inventory.Inventory) (*inventory.Inventory, audit.Event, error)) (any, error) {
	g.hostsMu.Lock()
	defer g.hostsMu.Unlock()
	cur, err := g.currentHosts()
	if err != nil {
		return nil, err
	}
	if err := g.hostsChangeable(); err != nil {
		return nil, err
	}
	next, ev, err := change(cur)
	if err != nil {
		return nil, err
	}
	if err := next.Save(g.hostsPath); err != nil {
		return nil, fmt.Errorf("writing the host inventory: %w", err)
	}
	ev.Approver = approver.Describe()
	if err := g.engine.Record(ev); err != nil {
		if rerr := cur.Save(g.hostsPath); rerr != nil {
			g.log.Error("host inventory: the change could not be recorded nor undone", "err", err, "undo", rerr)
		}
		return nil, fmt.Errorf("the audit log could not record the change, so it was not made: %w", err)
	}
	g.engine.SetHosts(next)
	g.log.Info("host inventory changed", "change", what, "detail", ev.Detail, "approver", ev.Approver)
	return api.HostsResult{Hosts: next.Hosts()}, nil
}

// sources lists the distinct sources of keys.
func sources(keys []api.HostKey) string {
	var out []string
	for _, k := range keys {
		if !slices.Contains(out, k.Source) {
			out = append(out, k.Source)
		}
	}
	return strings.Join(out, "; ")
}
