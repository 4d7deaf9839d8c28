package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sync"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/atomicfile"
	"github.com/postern/postern/internal/smallfile"
	"github.com/postern/postern/internal/vault"
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
	gate := &anchorGate{g: g}
	cfg.OnCheckpoint = gate.onCheckpoint
	// Open refuses a log that ends before the anchor beside it before it
	// adds anything: a recovery and a checkpoint it wrote into an older
	// copy would bring it up to the anchor for the next start.
	anchor, anchorName, anchorErr := api.AnchorBeside(cfg.Path)
	if anchorErr != nil && !errors.Is(anchorErr, fs.ErrNotExist) {
		// The next checkpoint writes it anew; meanwhile an unlock holds
		// the log to the anchor sealed in the vault.
		g.log.Warn("the audit log's anchor cannot be read, so the log is not held to it as it opens", "err", anchorErr)
	}
	withAnchor := cfg
	if anchorErr == nil {
		withAnchor.Anchors = []audit.Anchor{anchor}
	}
	l, err := audit.Open(withAnchor)
	if anchorErr == nil {
		err = behindAnchor(err, cfg.Path, anchor, anchorName)
	}
	switch {
	case errors.Is(err, audit.ErrLocked):
		return heldError{cfg.Path}
	case errors.Is(err, audit.ErrDamaged):
		return err // it names the log and the first bad record
	case err != nil:
		return fmt.Errorf("audit log: %w", err)
	}
	// What this gateway's Open added (a recovery, a checkpoint) does
	// not count: an older copy may reach an anchor's seq with it.
	head := l.Found()
	if anchorErr == nil {
		if err := olderThan(head, cfg.Path, anchor, anchorName); err != nil {
			l.Close()
			return fmt.Errorf("%w: %w", audit.ErrDamaged, err)
		}
	}
	gate.release()
	al := newAuditLog(g, cfg, l, gate)
	g.auditMu.Lock()
	g.audit, g.auditOpened, g.auditFound = al, head, l
	g.auditMu.Unlock()
	g.engine.SetAudit(al)
	return nil
}

// anchorGate holds back the anchors of a log being opened until it is
// known not to be an older copy, whose checkpoints must not overwrite the
// anchors that show it; the latest one held goes on once it is released.
type anchorGate struct {
	g       *Gateway
	mu      sync.Mutex
	open    bool
	pending *audit.Anchor
}

func (c *anchorGate) onCheckpoint(a audit.Anchor) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.open {
		c.pending = &a
		return
	}
	c.g.onCheckpoint(a)
}

// hold holds the anchors from now on.
func (c *anchorGate) hold() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open, c.pending = false, nil
}

// release lets the held anchor, and those after it, go on.
func (c *anchorGate) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open = true
	if c.pending != nil {
		c.g.onCheckpoint(*c.pending)
		c.pending = nil
	}
}

// errAuditRolledBack: the audit log ends before an anchor of it.
var errAuditRolledBack = errors.New("the audit log is an older copy")

// olderThan returns errAuditRolledBack when a is an anchor past head, the
// end of the log at path: records were cut from the log, as when an older
// copy of it is put back in place. An anchor of another log (one moved
// aside by a person) says nothing about this one.
func olderThan(head audit.Anchor, path string, a audit.Anchor, where string) error {
	if a.LogID != head.LogID || a.Seq <= head.Seq {
		return nil
	}
	return fmt.Errorf("%w: %s ended at record %d when the gateway opened it, and %s records record %d of it", errAuditRolledBack, path, head.Seq, where, a.Seq)
}

// behindAnchor returns err, when it is Open's refusal of the log at path
// for not holding a, which where records, as errAuditRolledBack; any
// other error as it is.
func behindAnchor(err error, path string, a audit.Anchor, where string) error {
	if !errors.Is(err, audit.ErrBehindAnchor) {
		return err
	}
	return fmt.Errorf("%w: %s records record %d of %s: %w", errAuditRolledBack, where, a.Seq, filepath.Base(path), err)
}

// checkSealedAnchor refuses an unlock when the audit log, as the gateway
// opened it, ended before the anchor sealed into the vault v (by an
// earlier gateway): an older copy of the log was put back, perhaps with
// its older audit.anchor, and sealing this log's anchors would overwrite
// the evidence. The records this gateway added since do not count.
func (g *Gateway) checkSealedAnchor(v *vault.Vault) error {
	log := g.currentAudit()
	if log == nil {
		return nil
	}
	sec := v.Secret(api.SecretAuditAnchor)
	defer clear(sec)
	if len(sec) == 0 || g.anchors.sealedHere(sec) {
		return nil
	}
	a, err := api.ParseAnchor(string(sec))
	if err != nil {
		return nil
	}
	g.auditMu.Lock()
	opened, found := g.auditOpened, g.auditFound
	g.auditMu.Unlock()
	if err := olderThan(opened, log.Path(), a, "the anchor sealed into the vault"); err != nil {
		return err
	}
	// The records this gateway added may have brought an older copy up
	// to the anchor's seq: the record there must be the one it names.
	if err := found.Holds(a); err != nil {
		return fmt.Errorf("%w: %s, as the gateway opened it, differs from the anchor sealed into the vault: %w", errAuditRolledBack, log.Path(), err)
	}
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
	if err := g.engine.Record(audit.Event{Type: audit.EventGatewayStarted, VaultEpoch: epoch, Detail: g.startDetail(map[string]string{"audit": "set up while running"})}); err != nil {
		g.log.Error("audit log not written", "err", err)
	}
	g.log.Info("audit log started", "path", g.currentAudit().Path())
}

// startDetail is the Detail of gateway_started: the gateway's pid, the
// askpass program it pinned, an approver, with its hash, and the socket
// of the upstream agent whose keys it gates (which key_holder=upstream
// names); more adds to it.
func (g *Gateway) startDetail(more map[string]string) map[string]string {
	d := map[string]string{"pid": itoa(os.Getpid())}
	if path, hash, _ := g.askpass.Status(); path != "" {
		d["askpass"], d["askpass_sha256"] = path, hash
	}
	if up := g.agent.Upstream; up != nil {
		d["upstream"] = up.Socket
	}
	maps.Copy(d, more)
	return d
}

// recordStart records the start, and the restart with the previous boot
// id when an earlier gateway left one.
func (g *Gateway) recordStart(stateDir string) error {
	bootFile := filepath.Join(stateDir, xdg.BootIDFile)
	prev, _ := smallfile.Read(bootFile, 4096)
	if err := atomicfile.Write(bootFile, []byte(g.bootID+"\n"), 0o600); err != nil {
		g.log.Warn("cannot record the boot id", "err", err)
	}
	if g.currentAudit() == nil {
		return nil
	}
	if err := g.engine.Record(audit.Event{Type: audit.EventGatewayStarted, Detail: g.startDetail(nil)}); err != nil {
		return err
	}
	if p := string(bytes.TrimSpace(prev)); p != "" {
		return g.engine.Record(audit.Event{Type: audit.EventGatewayRestarted, PrevBootID: p})
	}
	return nil
}

// recordVault records a vault epoch change and seals the log with a
// checkpoint, as every lock and unlock does. The error says the change
// was not recorded.
func (g *Gateway) recordVault(epoch uint64, why audit.Reason, locked bool) error {
	if why == audit.ReasonVaultFileCreated {
		g.startAuditLate(epoch)
	}
	log := g.currentAudit()
	if log == nil {
		return nil
	}
	typ := audit.EventVaultUnlocked
	if locked {
		typ = audit.EventVaultLocked
	}
	err := g.engine.Record(audit.Event{Type: typ, VaultEpoch: epoch, Reason: why})
	if err != nil {
		g.log.Error("vault change not recorded", "event", typ, "reason", why, "err", err)
	}
	if cerr := log.Checkpoint(); cerr != nil {
		g.log.Error("audit checkpoint failed", "err", cerr)
	}
	return err
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
		if n := g.export.Dropped(); n > 0 {
			g.log.Warn("audit events and checkpoints not sent to syslog, of those the log recorded since the gateway started", "dropped", n, "sent", g.export.Sent(), "address", g.exportAddr)
		}
	}
}

// heldError is an audit log another running gateway holds: one gateway
// serves a vault and its audit log.
type heldError struct{ path string }

func (e heldError) Error() string {
	return fmt.Sprintf("the audit log %s is held by another running gateway", e.path)
}

func (heldError) Unwrap() error { return api.ErrAuditLogHeld }
