package gateway

import (
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"testing"
	"time"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/sshagent"
)

// A key added with ssh-add is recorded under the keyring's lock, and the
// record is stamped with the vault's epoch; a change of the vault file
// reloads the vault's keys into the keyring under the vault's lock. A
// program of the user that touches the vault file as a key is added
// must not make each wait for the other for ever, and the gateway with
// them.
func TestKeyAddedAsTheVaultReloads(t *testing.T) {
	pass := []byte("reload pass")
	s, keys, path := startVaultState(t, pass, "vault key")
	if err := s.Unlock(pass); err != nil {
		t.Fatal(err)
	}
	// As the gateway wires them: the agent records through the engine,
	// which stamps every event with the vault's epoch.
	engine := approvals.NewEngine(approvals.Config{Vault: s.lockedEpoch})

	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	id, err := sshagent.NewIdentity(priv, nil, "added")
	if err != nil {
		t.Fatal(err)
	}
	reloaded := make(chan struct{})
	record := func() error {
		// The file changes while the add is being recorded: the reload
		// takes the vault's lock, then waits for the keyring's.
		later := time.Now().Add(time.Hour)
		if err := os.Chtimes(path, later, later); err != nil {
			t.Error(err)
		}
		go func() { s.fileChanged(); close(reloaded) }()
		for s.mu.TryLock() {
			s.mu.Unlock()
			time.Sleep(time.Millisecond)
		}
		return engine.Record(sshagent.KeyEvent(audit.EventAgentKeyAdded, id, ""))
	}
	added := make(chan error, 1)
	go func() { added <- keys.AddRecorded(id, record) }()
	select {
	case err := <-added:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the add and the vault's reload still wait for each other after 20s")
	}
	<-reloaded
	if ids, err := keys.Identities(); err != nil || len(ids) != 2 {
		t.Fatalf("after the add and the reload: %d keys, %v", len(ids), err)
	}
}
