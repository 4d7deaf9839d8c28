package gateway

import (
	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/config"
)

// reloadConfig reads the configuration again. An invalid file keeps the
// policy in force; the error is logged and shown by status.
func (g *Gateway) reloadConfig() {
	cfg, err := config.Load(g.configPath)
	g.mu.Lock()
	defer g.mu.Unlock()
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
	g.config, g.configErr = cfg, nil
	g.engine.SetPolicy(pol)
	g.engine.Record(audit.Event{Type: audit.EventPolicyReloaded, Detail: map[string]string{"path": g.configPath, "approval": cfg.Approval, "rules": itoa(len(cfg.Rules))}})
	g.log.Info("configuration reloaded", "path", g.configPath, "approval", cfg.Approval)
}
