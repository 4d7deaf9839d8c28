package gateway

import (
	"errors"
	"fmt"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/config"
)

// reloadConfig reads the configuration again. An invalid file keeps the
// policy in force; so does a file that was removed or emptied, which a
// running gateway never takes for the defaults (they drop every rule).
// Either way the error is logged and shown by status.
func (g *Gateway) reloadConfig() {
	cfg, err := config.Reload(g.configPath)
	g.mu.Lock()
	defer g.mu.Unlock()
	if errors.Is(err, config.ErrMissing) || errors.Is(err, config.ErrEmpty) {
		if !g.configFromFile {
			return // running on the defaults already: nothing went away
		}
		err = fmt.Errorf("%w; a running gateway does not fall back to the defaults: restore the file, or restart the gateway to run with the defaults", err)
	}
	if err != nil {
		g.configErr = err
		g.log.Error("configuration not reloaded; the previous policy stays in force", "err", err)
		return
	}
	pol, err := approvals.Compile(cfg)
	if err != nil {
		g.configErr = err
		g.log.Error("configuration not reloaded; the previous policy stays in force", "err", err)
		return
	}
	if cfg.Upstream != g.config.Upstream || cfg.UpstreamChanges != g.config.UpstreamChanges {
		g.log.Warn("upstream and upstream_changes take effect when the gateway restarts; the upstream agent in use stays")
	}
	g.config, g.configErr, g.configFromFile = cfg, nil, true
	g.engine.SetPolicy(pol)
	g.engine.Record(audit.Event{Type: audit.EventPolicyReloaded, Detail: map[string]string{"path": g.configPath, "approval": cfg.Approval, "rules": itoa(len(cfg.Rules))}})
	g.log.Info("configuration reloaded", "path", g.configPath, "approval", cfg.Approval)
}
