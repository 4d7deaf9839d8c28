package gateway

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/inventory"
	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/safetext"
	"github.com/postern/postern/sshagent"
)

// opCheck dry-runs the policy in force ("postern check").
func (g *Gateway) opCheck(ctx context.Context, _ *procid.Peer, a api.CheckArgs) (any, error) {
	c := approvals.Check{Forwarded: a.Forwarded}
	// Names count as the inventory gives them: a name it lacks is a
	// destination postern could not name. Case does not count, as it
	// does not for rules, nor does a trailing dot: every host whose name
	// is the one given, so read, counts (each rule's strictest). A name
	// the inventory lacks is still one a login is made by: ssh verifies
	// the key known_hosts gives it, and the gateway names the login by
	// that key, so the hosts the inventory gives those keys count, and a
	// key it does not name makes the destination one it could not name.
	inv := g.engine.Hosts()
	pol := g.engine.Policy()
	var via []string
	for _, name := range a.Hosts {
		hosts := inventoryNamed(inv, name)
		if len(hosts) == 0 {
			var unnamed bool
			hosts, unnamed = keysNamedBy(inv, pol.Hosts.KeysNamed(name))
			if len(hosts) > 0 {
				var names []string
				for _, h := range hosts {
					names = append(names, h.Name)
				}
				via = append(via, fmt.Sprintf("known_hosts gives %s the key of %s", safetext.Quote(name, safetext.Name), strings.Join(names, ", ")))
			}
			c.Unknown = c.Unknown || unnamed
		}
		if len(hosts) == 0 {
			c.Unknown = true
		}
		for _, h := range hosts {
			c.Names = append(c.Names, h.Name)
			if h.Class != "" && !slices.Contains(c.Classes, h.Class) {
				c.Classes = append(c.Classes, h.Class)
			}
		}
	}
	res := api.CheckResult{Key: a.Key}
	c.Key = approvals.Key{Comment: a.Key}
	if strings.HasPrefix(a.Key, "SHA256:") {
		c.Key = approvals.Key{Fingerprint: a.Key}
	}
	// A key named by its comment is the one key that has it: keys made on
	// one machine share ssh-keygen's default comment, and rules name
	// either by its fingerprint.
	// The upstream agent's keys count as it lists them: a rule on a
	// comment applies to a key named by its fingerprint, as when a
	// request comes, and the other way round.
	ids, err := g.keys.Identities()
	res.Locked = errors.Is(err, sshagent.ErrLocked)
	own := len(ids)
	if a.Key != "" {
		ids = append(ids, g.agent.UpstreamListed(ctx)...)
	}
	// A key counts with every comment it is held under, as a request is
	// decided: the vault's copy behind one added again is not listed.
	var named []string
	for i, id := range ids {
		if a.Key == "" {
			break
		}
		fp := id.Fingerprint() // of the key a certificate certifies, as a request is decided
		comments := g.agent.KeyComments(id.Key)
		if (fp != a.Key && id.Comment != a.Key && !slices.Contains(comments, a.Key)) || slices.Contains(named, fp) {
			continue
		}
		named = append(named, fp)
		c.Key = approvals.Key{Fingerprint: fp, Comment: id.Comment, Comments: func() []string { return comments }, Type: id.Key.Type(), Upstream: i >= own}
		if !c.Key.Upstream {
			c.Key.Confirm, _ = g.keys.Constraints(id)
		}
		res.Key, res.KeyHeld = fp+" ("+id.Comment+")", true
	}
	if len(named) > 1 {
		return nil, badRequest(fmt.Errorf("key %s is the comment of %d keys the agent holds (%s): name one by its fingerprint", safetext.Quote(a.Key, safetext.Name), len(named), strings.Join(named, ", ")))
	}
	for _, e := range a.Exes {
		x := procid.Exe{Path: e.Path}
		if b, err := hex.DecodeString(e.SHA256); err == nil && len(b) == len(x.SHA256) {
			copy(x.SHA256[:], b)
		}
		c.Exes = append(c.Exes, x)
	}
	res.CheckResult = pol.Check(c)
	if len(via) > 0 {
		res.Because = strings.Join(via, "; ") + "; " + res.Because
	}
	g.mu.Lock()
	if g.configErr != nil {
		res.ConfigError = g.configErr.Error()
	}
	g.mu.Unlock()
	return res, nil
}

// inventoryNamed returns the hosts of inv whose name is name, as rules
// read names.
func inventoryNamed(inv *inventory.Inventory, name string) []inventory.Host {
	if h, ok := inv.Host(name); ok {
		return []inventory.Host{h}
	}
	var hosts []inventory.Host
	for _, h := range inv.Hosts() {
		if approvals.SameHostName(h.Name, name) {
			hosts = append(hosts, h)
		}
	}
	return hosts
}

// keysNamedBy returns the hosts inv gives keys, each once, and whether
// one of keys is a key it gives no host.
func keysNamedBy(inv *inventory.Inventory, keys []ssh.PublicKey) (hosts []inventory.Host, unnamed bool) {
	for _, k := range keys {
		names, _ := inv.Lookup(k)
		if len(names) == 0 {
			unnamed = true
		}
		for _, n := range names {
			if h, ok := inv.Host(n); ok && !slices.ContainsFunc(hosts, func(x inventory.Host) bool { return x.Name == n }) {
				hosts = append(hosts, h)
			}
		}
	}
	return hosts, unnamed
}
