package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/atomicfile"
	"github.com/postern/postern/internal/config"
	"github.com/postern/postern/internal/smallfile"
	"github.com/postern/postern/internal/xdg"
)

// The configuration file is the user's, and anything the user runs can
// write it. So a change that loosens authority (approvals.Loosening)
// takes effect only once a person approves a policy change card; until
// then the strictest of the approved configuration and the file is in
// force. A change that only tightens takes effect at once. The approved
// configuration is kept in the state directory, so that a restart does
// not put an unapproved file in force, and sealed into the vault, so that
// a rewritten copy there does not either (sealedpolicy.go).

// readConfig reads the configuration file and its bytes (nil for a
// missing file, which means the defaults).
func readConfig(path string) (config.File, []byte, error) {
	b, err := smallfile.Read(path, config.MaxSize)
	if errors.Is(err, fs.ErrNotExist) {
		return config.Defaults(), nil, nil
	}
	if err != nil {
		return config.File{}, nil, err
	}
	f, err := config.Parse(path, b)
	return f, b, err
}

// loadApproved reads the approved configuration; ok is false when there
// is none (the first start), or it cannot be read or no longer parses
// (which is logged). Its values are those a person approved, perhaps
// under an older postern that took some this one refuses in a
// configuration file: they are not checked again (parseApproved).
func (g *Gateway) loadApproved() (config.File, []byte, bool) {
	p := g.approvedPath()
	b, err := smallfile.Read(p, config.MaxSize)
	if errors.Is(err, fs.ErrNotExist) {
		return config.File{}, nil, false
	}
	var f config.File
	if err == nil {
		f, err = parseApproved(p, b)
	}
	if err != nil {
		g.log.Warn("the approved configuration cannot be read; the file's is taken as approved", "path", p, "err", err)
		return config.File{}, nil, false
	}
	return f, b, true
}

// parseApproved parses an approved configuration (config.ParseApproved)
// that compiles into a policy.
func parseApproved(name string, b []byte) (config.File, error) {
	f, err := config.ParseApproved(name, b)
	if err == nil {
		_, err = approvals.Compile(f)
	}
	return f, err
}

// initialPolicy decides the policy a starting gateway puts in force: the
// file's, unless it loosens the approved configuration, in which case the
// strictest of both, and a card is proposed once the gateway runs.
//
// The approved configuration is written under g.mu, and saved (sealed, by
// a goroutine of its own that reads it under g.mu) only once it is.
func (g *Gateway) initialPolicy(cfg config.File, raw []byte) (*approvals.Policy, error) {
	approved, araw, ok := g.loadApproved()
	if !ok {
		// Nothing approved yet: the file is, and loosens nothing.
		approved, araw = cfg, raw
	}
	if changes := approvals.Loosening(approved, cfg); len(changes) > 0 && !bytes.Equal(raw, araw) {
		g.mu.Lock()
		g.approved, g.approvedRaw = approved, araw
		g.pending, g.pendingRaw = changes, raw
		g.config = approvals.Strictest(approved, cfg)
		g.mu.Unlock()
		return approvals.CompileStrictest(approved, cfg)
	}
	g.mu.Lock()
	g.approved, g.approvedRaw = cfg, raw
	g.mu.Unlock()
	g.saveApproved(raw)
	return approvals.Compile(cfg)
}

// proposePending shows the card for a change found at start.
func (g *Gateway) proposePending() {
	g.mu.Lock()
	changes, raw, base := g.pending, g.pendingRaw, g.approvedRaw
	g.mu.Unlock()
	if len(changes) > 0 {
		g.propose(changes, raw, base)
	}
}

// reloadConfig reads the configuration again. An invalid file keeps the
// policy in force; so does a file that was removed or emptied, which a
// running gateway never takes for the defaults (they drop every rule).
// Either way the error is logged and shown by status.
func (g *Gateway) reloadConfig() {
	g.judgeMu.Lock()
	defer g.judgeMu.Unlock()
	// One read: what is judged and what is kept as approved are the same
	// bytes, whatever a program does to the file meanwhile.
	cfg, raw, err := config.Reload(g.configPath)
	if err == nil {
		_, err = approvals.Compile(cfg)
	}
	g.mu.Lock()
	if errors.Is(err, config.ErrMissing) || errors.Is(err, config.ErrEmpty) {
		if !g.configFromFile {
			g.mu.Unlock()
			return // running on the defaults already: nothing went away
		}
		err = fmt.Errorf("%w; a running gateway does not fall back to the defaults: restore the file, or restart the gateway to run with the defaults", err)
	}
	if err != nil {
		g.configErr = err
		g.mu.Unlock()
		g.log.Error("configuration not reloaded; the previous policy stays in force", "err", err)
		return
	}
	g.configErr = nil
	if cfg.Upstream != g.config.Upstream || cfg.UpstreamChanges != g.config.UpstreamChanges {
		g.log.Warn("upstream and upstream_changes take effect when the gateway restarts; the upstream agent in use stays")
	}
	g.judge(cfg, raw)
}

// judge puts the configuration file's cfg in force if it loosens nothing
// against the approved one, and otherwise the strictest of both with a
// card for the change. The caller holds g.mu, which judge releases.
func (g *Gateway) judge(cfg config.File, raw []byte) {
	changes := approvals.Loosening(g.approved, cfg)
	if len(changes) == 0 || bytes.Equal(raw, g.approvedRaw) {
		g.mu.Unlock()
		g.engine.WithdrawPolicy(audit.ReasonNoLongerLoosens)
		g.putInForce(cfg, raw)
		return
	}
	pol, err := approvals.CompileStrictest(g.approved, cfg)
	if err != nil {
		g.configErr = err
		g.mu.Unlock()
		return
	}
	g.config, g.pending, g.pendingRaw = approvals.Strictest(g.approved, cfg), changes, raw
	base := g.approvedRaw
	g.mu.Unlock()
	// The tightening parts apply at once.
	g.engine.SetPolicy(pol)
	g.propose(changes, raw, base)
}

// propose shows a policy change card for raw, which loosens the approved
// configuration base as changes say; approving it puts raw in force if
// the file still holds it and base is still the approved configuration
// (an unlock may have put back another, sealed in the vault, against
// which raw loosens more than the card shows).
func (g *Gateway) propose(changes []string, raw, base []byte) {
	g.engine.ProposePolicy(changes, func() error {
		g.judgeMu.Lock()
		defer g.judgeMu.Unlock()
		g.mu.Lock()
		same := bytes.Equal(g.approvedRaw, base)
		g.mu.Unlock()
		if !same {
			return errors.New("the approved configuration changed since the card was shown (the vault's sealed copy was put back), so the card does not show all the change loosens; the file is judged again when it changes or on SIGHUP")
		}
		cfg, now, err := readConfig(g.configPath)
		if err != nil {
			return fmt.Errorf("the configuration no longer reads: %w", err)
		}
		if !bytes.Equal(now, raw) {
			return errors.New("the configuration file changed again since the card was shown; the new change has its own card")
		}
		g.putInForce(cfg, raw)
		return nil
	})
}

// putInForce makes cfg the approved configuration and its policy the
// policy in force.
func (g *Gateway) putInForce(cfg config.File, raw []byte) {
	pol, err := approvals.Compile(cfg)
	if err != nil {
		g.log.Error("configuration not put in force", "err", err)
		return
	}
	g.mu.Lock()
	if !g.unsealed {
		g.unsealed, g.approvedOver = true, g.approvedRaw
	}
	g.config, g.approved, g.approvedRaw, g.pending, g.pendingRaw = cfg, cfg, raw, nil, nil
	g.configFromFile = true
	g.mu.Unlock()
	g.saveApproved(raw)
	g.engine.SetPolicy(pol)
	g.engine.Record(audit.Event{Type: audit.EventPolicyReloaded, Detail: map[string]string{"path": g.configPath, "approval": cfg.Approval, "rules": itoa(len(cfg.Rules))}})
	g.log.Info("configuration reloaded", "path", g.configPath, "approval", cfg.Approval)
}

// saveApproved keeps raw as the approved configuration, in the state
// directory and, once the vault is unlocked, sealed into it.
func (g *Gateway) saveApproved(raw []byte) {
	if err := atomicfile.Write(g.approvedPath(), raw, 0o600); err != nil {
		g.log.Warn("cannot keep the approved configuration", "err", err)
	}
	go g.sealApproved()
}

func (g *Gateway) approvedPath() string { return filepath.Join(g.stateDir, xdg.ApprovedConfigFile) }
