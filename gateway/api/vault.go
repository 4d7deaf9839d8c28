package api

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/vault"
	"github.com/postern/postern/internal/xdg"
)

// The vault keeps the audit log's identity, which opens the log's
// entries, as a secret, and the log's first checkpoint key as metadata.
const (
	secretAuditIdentity = "audit-identity"
	metaAuditPK0        = "audit-pk0"
)

// NewVault describes a vault InitVault created.
type NewVault struct {
	Path string
	// AuditPin is the audit log's first checkpoint key, printable. Kept
	// somewhere the log's writer cannot change, it proves the log is this
	// one.
	AuditPin string
}

// ErrVaultExists is returned by InitVault when the state directory holds
// a vault already.
var ErrVaultExists = errors.New("a vault already exists")

// InitVault creates the vault in the state directory with KDF parameters
// p, and sets up the audit log whose identity the vault keeps. It never
// overwrites a vault, nor an audit log set up for another vault; it asks
// for the new passphrase only once both checks passed. A vault written
// whose directory could not be synced is returned with the error.
func InitVault(p vault.Params, passphrase func() ([]byte, error)) (*NewVault, error) {
	stateDir, err := xdg.StateDir()
	if err != nil {
		return nil, err
	}
	if err := xdg.EnsureDir(stateDir); err != nil {
		return nil, err
	}
	path := filepath.Join(stateDir, xdg.VaultFile)
	if _, err := os.Stat(path); err == nil {
		return nil, fmt.Errorf("%w at %s; postern never overwrites one", ErrVaultExists, path)
	}
	if _, err := audit.LoadSetup(stateDir); err == nil {
		return nil, fmt.Errorf("an audit log is already set up in %s, for another vault; move %s and audit.* aside (keep them to read the old log)", stateDir, xdg.AuditLogFile)
	}
	pass, err := passphrase()
	if err != nil {
		return nil, err
	}
	defer clear(pass)
	setup, err := audit.NewSetup(stateDir)
	if err != nil {
		return nil, err
	}
	defer clear(setup.Identity[:])
	v, err := vault.Create(path, pass, p, map[string]string{metaAuditPK0: setup.PK0String()},
		map[string][]byte{secretAuditIdentity: setup.Identity[:]})
	if v == nil {
		for _, f := range []string{setup.KeyFile, setup.PinFile, setup.RecipientFile} {
			os.Remove(f)
		}
		return nil, err
	}
	// Written, also when only the sync that makes it durable failed (err
	// says so): the audit log's setup stays with the vault that holds its
	// identity.
	v.Wipe()
	return &NewVault{Path: path, AuditPin: setup.PK0String()}, err
}
