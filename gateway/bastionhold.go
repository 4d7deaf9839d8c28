package gateway

import (
	"errors"
	"slices"

	"github.com/postern/postern/internal/config"
)

// A bastion is started with the gateway, from the configuration in force
// then. When an unlock finds the state directory's approved configuration
// rewritten and puts back the one sealed in the vault (sealedpolicy.go),
// a bastion that configuration does not approve (not enabled, verifying
// real hosts with other known_hosts files, or letting in hosts without a
// post-quantum key exchange it requires) serves no connection from then
// on, until the gateway restarts.

// bastionStart is what the bastion started with.
type bastionStart struct {
	known     []string // the known_hosts files that verify the real hosts
	requirePQ bool
}

var errBastionHeld = errors.New("the bastion was started from a configuration the one sealed in the vault does not approve; restart the gateway")

// holdBastion refuses the bastion's connections from now on if approved
// does not approve the bastion as it started.
func (g *Gateway) holdBastion(approved config.File) {
	s := g.bastionStarted
	if s == nil {
		return
	}
	known := approved.Bastion.KnownHosts
	if len(known) == 0 {
		known = approved.KnownHosts
	}
	if approved.Bastion.Enabled && slices.Equal(known, s.known) && (s.requirePQ || !approved.Bastion.RequirePQKex) {
		return
	}
	g.bastionHeld.Store(true)
	g.log.Warn("the bastion serves no more: "+errBastionHeld.Error(), "known_hosts", s.known, "approved_known_hosts", known, "approved_enabled", approved.Bastion.Enabled)
}
