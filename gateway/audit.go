package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/atomicfile"
	"github.com/postern/postern/internal/xdg"
)

// openAudit opens the audit log when "postern vault init" set one up;
// without a setup the gateway runs without one (and says so in status).
// A damaged log stops the gateway: it never starts a new log over one it
// cannot verify.
func (g *Gateway) openAudit(stateDir string) error {
	setup, err := audit.LoadSetup(stateDir)
	if errors.Is(err, fs.ErrNotExist) {
		g.log.Info("no audit log: it is set up with the vault")
		return nil
	}
	if err != nil {
		return fmt.Errorf("audit log setup: %w", err)
	}
	cfg := setup.Config(filepath.Join(stateDir, xdg.AuditLogFile))
	if err := g.startExport(); err != nil {
		return fmt.Errorf("[audit] syslog: %w", err)
	}
	g.anchors = g.startAnchors()
	cfg.OnCheckpoint = g.onCheckpoint
	l, err := audit.Open(cfg)
	switch {
	case errors.Is(err, audit.ErrLocked):
		return fmt.Errorf("the audit log %s is held by another running gateway", cfg.Path)
	case errors.Is(err, audit.ErrDamaged):
		return err // it names the log and the first bad record
	case err != nil:
		return fmt.Errorf("audit log: %w", err)
	}
	al := newAuditLog(g, cfg, l)
	g.auditMu.Lock()
	g.audit = al
	g.auditMu.Unlock()
	g.engine.SetAudit(al)
	return nil
}

// currentAudit returns the audit log, or nil when there is none (yet).
func (g *Gateway) currentAudit() *auditLog {
	g.auditMu.Lock()
	defer g.auditMu.Unlock()
	return g.audit
}

// startAuditLate opens the audit log that "postern vault init" set up
// while this gateway ran, so that it records from now on without a
// restart. It is called when the vault file appears, with the vault's
// lock held: the event carries the epoch, so recording does not ask the
// vault.
func (g *Gateway) startAuditLate(epoch uint64) {
	if g.currentAudit() != nil {
		return
	}
	if _, err := audit.LoadSetup(g.stateDir); err != nil {
		return
	}
	if err := g.openAudit(g.stateDir); err != nil {
		g.log.Error("the audit log set up by vault init cannot be opened", "err", err)
		return
	}
	if err := g.engine.Record(audit.Event{Type: audit.EventGatewayStarted, VaultEpoch: epoch, Detail: map[string]string{"pid": itoa(os.Getpid()), "audit": "set up while running"}}); err != nil {
		g.log.Error("audit log not written", "err", err)
	}
	g.log.Info("audit log started", "path", g.currentAudit().Path())
}

// recordStart records the start, and the restart with the previous boot
// id when an earlier gateway left one.
func (g *Gateway) recordStart(stateDir string) error {
	bootFile := filepath.Join(stateDir, xdg.BootIDFile)
	prev, _ := os.ReadFile(bootFile)
	if err := atomicfile.Write(bootFile, []byte(g.bootID+"\n"), 0o600); err != nil {
		g.log.Warn("cannot record the boot id", "err", err)
	}
	if g.currentAudit() == nil {
		return nil
	}
	if err := g.engine.Record(audit.Event{Type: audit.EventGatewayStarted, Detail: map[string]string{"pid": itoa(os.Getpid())}}); err != nil {
		return err
	}
	if p := string(bytes.TrimSpace(prev)); p != "" {
		return g.engine.Record(audit.Event{Type: audit.EventGatewayRestarted, PrevBootID: p})
	}
	return nil
}

// recordVault records a vault epoch change and seals the log with a
// checkpoint, as every lock and unlock does.
func (g *Gateway) recordVault(epoch uint64, why audit.Reason, locked bool) {
	if why == audit.ReasonVaultFileCreated {
		g.startAuditLate(epoch)
	}
	log := g.currentAudit()
	if log == nil {
		return
	}
	typ := audit.EventVaultUnlocked
	if locked {
		typ = audit.EventVaultLocked
	}
	g.engine.Record(audit.Event{Type: typ, VaultEpoch: epoch, Reason: why})
	if err := log.Checkpoint(); err != nil {
		g.log.Error("audit checkpoint failed", "err", err)
	}
}

// closeAudit records the stop and closes the log with a final checkpoint.
func (g *Gateway) closeAudit() {
	log := g.currentAudit()
	if log == nil {
		return
	}
	g.engine.Record(audit.Event{Type: audit.EventGatewayStopped})
	if err := log.Close(); err != nil {
		g.log.Error("closing the audit log", "err", err)
	}
	g.anchors.close()
	if g.export != nil {
		g.export.Close()
	}
}
