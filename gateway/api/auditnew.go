package api

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/crypto/curve25519"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/smallfile"
	"github.com/postern/postern/internal/vault"
	"github.com/postern/postern/internal/xdg"
)

// A person who put back an older copy of the audit log (from a backup,
// after a disk failed) finds the vault refusing to unlock over it: the
// anchor sealed into the vault shows records are missing. NewAuditLog is
// the way on: the log and its keys move aside, intact, into a directory
// of their own, and a new log is set up in their place. The vault keeps
// the retired log's identity (and anchor) under the directory's name, so
// the retired log stays readable and verifiable where it went.

// retiredPrefix starts the name of a retired log's directory, and of the
// vault secrets kept for it.
const retiredPrefix = "audit-retired-"

// RetiredAuditLog describes what NewAuditLog did.
type RetiredAuditLog struct {
	// Dir is where the old log and its keys went; its name is also the
	// vault secret that keeps the old log's identity.
	Dir     string
	Moved   []string // the files moved, by their old paths
	NewPin  string   // the new log's first checkpoint key, printable
	LogPath string   // the new log's path (the old one's)
	OldLog  string   // the old log's path now, if there was one
}

// NewAuditLog retires the audit log of the state directory and its keys
// and sets up a new log, with the vault openVault opens (so a wrong
// passphrase changes nothing). No gateway may run: it holds the log, and
// NewAuditLog fails with ErrAuditLogHeld. On any error
// nothing is left changed.
func NewAuditLog(openVault func() (*vault.Vault, error)) (*RetiredAuditLog, error) {
	stateDir, err := xdg.StateDir()
	if err != nil {
		return nil, err
	}
	if _, err := audit.LoadSetup(stateDir); err != nil {
		return nil, fmt.Errorf("no audit log is set up in %s (postern vault init sets one up): %w", stateDir, err)
	}
	v, err := openVault()
	if err != nil {
		return nil, err
	}
	defer v.Wipe()
	old := v.Secret(secretAuditIdentity)
	defer clear(old)
	if len(old) != 32 {
		return nil, errors.New("the vault holds no audit log identity: it is not the vault of this log")
	}
	name := retiredPrefix + time.Now().UTC().Format("20060102T150405Z")
	logPath := filepath.Join(stateDir, xdg.AuditLogFile)
	r := &RetiredAuditLog{Dir: filepath.Join(stateDir, name), LogPath: logPath}
	r.Moved, err = audit.Retire(stateDir, logPath, r.Dir)
	if errors.Is(err, audit.ErrLocked) {
		// Retire's error says it again, and tells to stop the gateway,
		// which the command line's hint does.
		return nil, fmt.Errorf("%w: %s", ErrAuditLogHeld, logPath)
	}
	if err != nil {
		return nil, err
	}
	undo := func(cause error) error {
		for _, f := range []string{xdg.AuditKeyFile, xdg.AuditPinFile, xdg.AuditRecipientFile} {
			os.Remove(filepath.Join(stateDir, f))
		}
		if err := audit.Unretire(r.Dir, r.Moved); err != nil {
			return fmt.Errorf("%w; and putting the old log back failed: %v (it is in %s)", cause, err, r.Dir)
		}
		return cause
	}
	setup, err := audit.NewSetup(stateDir)
	if err != nil {
		return nil, undo(err)
	}
	defer clear(setup.Identity[:])
	if err := v.SetSecret(name, old); err != nil {
		return nil, undo(err)
	}
	if a := v.Secret(SecretAuditAnchor); a != nil {
		err := v.SetSecret(name+"-anchor", a)
		clear(a)
		v.DeleteSecret(SecretAuditAnchor)
		if err != nil {
			return nil, undo(err)
		}
	}
	meta := v.Meta()
	meta[metaAuditPK0] = setup.PK0String()
	if err := v.SetMeta(meta); err != nil {
		return nil, undo(err)
	}
	if err := v.SetSecret(secretAuditIdentity, setup.Identity[:]); err != nil {
		return nil, undo(err)
	}
	if err := v.Save(); err != nil {
		return nil, undo(fmt.Errorf("saving the vault: %w", err))
	}
	r.NewPin = setup.PK0String()
	for _, m := range r.Moved {
		if m == logPath {
			r.OldLog = filepath.Join(r.Dir, filepath.Base(m))
		}
	}
	return r, nil
}

// auditIdentityFor returns the identity in v that opens the log at
// logPath: a retired log's, kept under its directory's name, when its
// public half is the recipient written beside the log (a retired log keeps
// its audit.recipient), and otherwise the current log's.
func auditIdentityFor(v *vault.Vault, logPath string) ([32]byte, error) {
	b, err := smallfile.Read(filepath.Join(filepath.Dir(logPath), xdg.AuditRecipientFile), 64<<10)
	if err != nil {
		return AuditIdentity(v)
	}
	want, err := audit.ParseRecipient(strings.TrimSpace(string(b)))
	if err != nil {
		return AuditIdentity(v)
	}
	for _, name := range v.SecretNames() {
		if !strings.HasPrefix(name, retiredPrefix) || strings.HasSuffix(name, "-anchor") {
			continue
		}
		sec := v.Secret(name)
		if len(sec) == 32 {
			pub, err := curve25519.X25519(sec, curve25519.Basepoint)
			if err == nil && subtle.ConstantTimeCompare(pub, want[:]) == 1 {
				id := [32]byte(sec)
				clear(sec)
				return id, nil
			}
		}
		clear(sec)
	}
	return AuditIdentity(v)
}
