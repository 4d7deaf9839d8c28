package gateway

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/atomicfile"
	"github.com/postern/postern/internal/vault"
	"github.com/postern/postern/internal/xdg"
)

// After each checkpoint the audit log's chain head is anchored outside the
// log: written to audit.anchor beside it (for a person to copy
// elsewhere, and for "postern audit verify" to read), sealed into the
// vault while it is unlocked (where whoever rewrites the log cannot
// forge it), and sent to syslog when that export is on. An older copy of
// the log put back in place then ends before an anchor, and verification
// says so. The writer calls onCheckpoint on its own goroutine, which must
// not wait for a disk: the keeper writes on a goroutine of its own, the
// latest anchor winning.

// anchorKeeper writes the latest anchor.
type anchorKeeper struct {
	g      *Gateway
	keepMu sync.Mutex // held while an anchor is written (flush)
	mu     sync.Mutex
	last   string        // the printable form of the latest anchor
	sealed []byte        // the anchor this gateway last sealed into the vault
	latest *audit.Anchor // not written yet
	wake   chan struct{}
	done   chan struct{}
}

func (g *Gateway) startAnchors() *anchorKeeper {
	k := &anchorKeeper{g: g, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go k.run()
	return k
}

// onCheckpoint takes the chain head of a durable checkpoint.
func (g *Gateway) onCheckpoint(a audit.Anchor) {
	g.exportSend(anchorMessage(a))
	k := g.anchors
	k.mu.Lock()
	k.latest, k.last = &a, api.FormatAnchor(a)
	k.mu.Unlock()
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

func (k *anchorKeeper) run() {
	defer close(k.done)
	for range k.wake {
		k.flush()
	}
}

// flush writes the latest anchor not written yet, and waits for one being
// written. A lock flushes before it wipes the vault's key: the unlock's
// own checkpoint, taken while the unlock held the vault, is otherwise
// sealed only after it, and a lock that came first left the vault with an
// older anchor than the log's.
func (k *anchorKeeper) flush() {
	k.keepMu.Lock()
	defer k.keepMu.Unlock()
	k.mu.Lock()
	a := k.latest
	k.latest = nil
	k.mu.Unlock()
	if a != nil {
		k.keep(*a)
	}
}

// keep writes a beside the log and seals it into the vault.
func (k *anchorKeeper) keep(a audit.Anchor) {
	g := k.g
	line := []byte(api.FormatAnchor(a) + "\n")
	if err := atomicfile.Write(filepath.Join(g.stateDir, xdg.AuditAnchorFile), line, 0o600); err != nil {
		g.log.Warn("cannot write the audit log's anchor", "err", err)
	}
	sealed, err := g.vault.sealSecret(api.SecretAuditAnchor, line)
	if err != nil {
		g.log.Warn("cannot seal the audit log's anchor into the vault", "err", err)
	}
	if sealed {
		k.mu.Lock()
		k.sealed = line
		k.mu.Unlock()
	}
}

// sealedHere reports whether line is the anchor this gateway last sealed.
func (k *anchorKeeper) sealedHere(line []byte) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.sealed != nil && bytes.Equal(k.sealed, line)
}

// close writes the anchor of the last checkpoint, then stops.
func (k *anchorKeeper) close() {
	close(k.wake)
	<-k.done
	k.flush()
}

// sealSecret stores value as the vault's secret name, while the vault is
// unlocked (otherwise it does nothing), and says whether the vault holds
// it (also with an error, when only the sync that makes the write
// durable failed): the gateway saves the vault with
// the data key it holds, and takes its own save in, so that no epoch
// moves for it. It waits for an unlock or a change of the vault in
// progress, which would otherwise find the file changed under it.
func (s *vaultState) sealSecret(name string, value []byte) (bool, error) {
	s.unlockMu.Lock()
	defer s.unlockMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.locked || s.dk == nil {
		return false, nil
	}
	v, err := vault.OpenWithKey(s.path, s.dk)
	if err != nil {
		return false, err
	}
	defer v.Wipe()
	// An older copy put back, not yet seen by the file watcher, is
	// never written out again as a newer generation.
	if err := s.refuseOlder(v); err != nil {
		return false, err
	}
	old := v.Secret(name)
	same := bytes.Equal(old, value)
	version, newer := newerSealed(old, value)
	clear(old)
	switch {
	case same:
		return true, nil
	case newer:
		return false, fmt.Errorf("%w: %s is sealed in version %d", errNewerSealed, name, version)
	}
	if err := v.SetSecret(name, value); err != nil {
		return false, err
	}
	err = v.Save()
	if err != nil && !vault.Written(err) {
		return false, err
	}
	s.stamp, _ = stampOf(s.path)
	s.seen(v)
	return true, err
}

// lastAnchor returns the printable form of the latest anchor, or "".
func (k *anchorKeeper) lastAnchor() string {
	if k == nil {
		return ""
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.last
}
