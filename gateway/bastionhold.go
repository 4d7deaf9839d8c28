package gateway

import (
	"errors"
	"slices"
	"time"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/internal/config"
)

// A bastion is started with the gateway, from the configuration in force
// then. When an unlock finds the state directory's approved configuration
// rewritten and puts back the one sealed in the vault (sealedpolicy.go),
// a bastion that configuration does not approve serves no connection from
// then on, and sends no command on a connection it serves already, until
// the gateway restarts: one it does not enable, or one
// whose settings would loosen it as a policy change would (real hosts
// verified with a known_hosts file it does not trust, or without one
// whose @revoked lines it keeps, or hosts let in without the post-quantum
// key exchange it requires). A bastion that only tightens it (a known_hosts
// file fewer, as a gateway restarted on a stricter file while the vault
// was locked) goes on.

// bastionStart is what the bastion started with: the settings that
// decide which real hosts it trusts.
type bastionStart struct {
	bastion    config.Bastion
	knownHosts []string // the top-level ones, which it falls back to
}

var errBastionHeld = errors.New("the bastion was started from a configuration the one sealed in the vault does not approve; restart the gateway")

// holdBastion refuses the bastion's connections from now on if approved
// does not approve the bastion as it started.
func (g *Gateway) holdBastion(approved config.File) {
	s := g.bastionStarted
	if s == nil {
		return
	}
	started := approved
	started.Bastion, started.KnownHosts = s.bastion, s.knownHosts
	loosens := approvals.Loosening(approved, started)
	if len(loosens) == 0 {
		return
	}
	now := time.Now()
	g.bastionHeld.Store(&now)
	// Commands on the connections it serves already are refused too.
	if js := g.journal.Load(); js != nil {
		js.mu.Lock()
		servers := slices.Clone(js.servers)
		js.mu.Unlock()
		for _, srv := range servers {
			srv.Hold(errBastionHeld.Error())
		}
	}
	g.log.Warn("the bastion serves no more: "+errBastionHeld.Error(), "loosening", loosens)
}
