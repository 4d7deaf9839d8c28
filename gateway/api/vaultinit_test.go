package api

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/atomicfile"
	"github.com/postern/postern/internal/vault"
)

// A vault written by init whose directory could not then be synced
// (atomicfile.ErrNotDurable) is there, holding the audit log's identity:
// the audit log's files set up for it stay beside it, where init removed
// them and left a vault whose audit log could never be opened, and a
// second init refused to replace it.
func TestInitWrittenButNotDurableKeepsTheAuditSetup(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	// The sync fails once the vault is in place: the audit log's setup,
	// written before it, is durable.
	restore := atomicfile.SetSyncDirForTest(func(dir string) error {
		if _, err := os.Stat(filepath.Join(dir, "vault")); err == nil {
			return errors.New("input/output error")
		}
		return atomicfile.SyncDir(dir)
	})
	nv, err := InitVault(vault.FloorParams(), func() ([]byte, error) { return []byte("init pass"), nil })
	restore()
	if !errors.Is(err, atomicfile.ErrNotDurable) {
		t.Fatalf("init: %v, want the directory sync's failure", err)
	}
	dir := filepath.Join(state, "postern")
	if _, err := os.Stat(filepath.Join(dir, "vault")); err != nil {
		t.Fatalf("the vault written: %v", err)
	}
	if _, err := audit.LoadSetup(dir); err != nil {
		t.Fatalf("the vault was written and its audit log's setup is gone: %v", err)
	}
	if nv == nil || nv.AuditPin == "" {
		t.Fatalf("init says nothing of the vault it wrote: %+v", nv)
	}
}
