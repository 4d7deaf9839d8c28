package gateway

import (
	"encoding/json"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/procid"
)

// why answers the why@postern agent extension ("postern why"): a caller
// on a run's socket learns about that run only.
func (g *Gateway) why(peer *procid.Peer, ch approvals.Channel) ([]byte, error) {
	state, _ := g.vault.State()
	res := api.WhyResult{Run: ch.Run, VaultLocked: state == api.VaultLocked, BootID: g.bootID}
	if w, ok := g.engine.WhyFor(peer, ch.Run); ok {
		res.Last = &w
	}
	if log := g.currentAudit(); log != nil {
		st := log.status()
		res.AuditFailing, res.AuditFailingSince = st.Failing, st.FailingSince
	}
	return json.Marshal(res)
}
