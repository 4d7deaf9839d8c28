package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/vault"
)

// A person restores an older copy of the audit log from a backup (the
// newer one is lost): the vault, whose sealed anchor shows the copy is
// older, refuses to unlock over it. "postern audit new" is the way on: it
// refuses while a gateway holds the log or with a wrong passphrase,
// changing nothing; then it moves the log and its keys aside, intact and
// still readable, and the next gateway starts a new log and unlocks.
func TestAuditNewAfterAnOlderCopy(t *testing.T) {
	pass := []byte("restore pass")
	dir := gatewayHome(t)
	vaultPath := initTestVault(t, pass)
	state := filepath.Dir(vaultPath)
	ctx := context.Background()
	open := func(p []byte) func() (*vault.Vault, error) {
		return func() (*vault.Vault, error) { return vault.Open(vaultPath, bytes.Clone(p)) }
	}
	unlock := func(sock string) error {
		return api.NewClient(sock).Unlock(ctx, api.UnlockArgs{Passphrase: bytes.Clone(pass)})
	}

	_, sock, stop := runGateway(t, dir)
	if err := unlock(sock); err != nil {
		t.Fatal(err)
	}
	first := waitSealedAnchor(t, vaultPath, pass, 0)
	stop()
	backup := t.TempDir()
	copyAudit(t, state, backup)

	// More records and checkpoints, anchored in the vault.
	_, sock, stop = runGateway(t, dir)
	c := api.NewClient(sock)
	for range 3 {
		if err := unlock(sock); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Lock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	waitSealedAnchor(t, vaultPath, pass, first.Seq)
	stop()

	// The backup put back: the vault refuses to unlock over it.
	removeAudit(t, state)
	copyAudit(t, backup, state)
	_, sock, stop = runGateway(t, dir)
	if err := unlock(sock); !api.HasCode(err, api.CodeAuditRolledBack) {
		t.Fatalf("unlock over the older copy: %v", err)
	}
	oldPin, _ := os.ReadFile(filepath.Join(state, "audit.pin"))

	// Refused while the gateway holds the log, and with a wrong
	// passphrase: nothing moves.
	if _, err := api.NewAuditLog(open(pass)); !errors.Is(err, api.ErrAuditLogHeld) {
		t.Fatalf("with a gateway running: %v", err)
	}
	stop()
	if _, err := api.NewAuditLog(open([]byte("wrong"))); !errors.Is(err, vault.ErrWrongPassphrase) {
		t.Fatalf("with a wrong passphrase: %v", err)
	}
	if pin, _ := os.ReadFile(filepath.Join(state, "audit.pin")); !bytes.Equal(pin, oldPin) {
		t.Fatal("a refused audit new changed the setup")
	}
	if ents, _ := filepath.Glob(filepath.Join(state, "audit-retired-*")); len(ents) != 0 {
		t.Fatalf("a refused audit new left %q", ents)
	}

	r, err := api.NewAuditLog(open(pass))
	if err != nil {
		t.Fatal(err)
	}
	if r.OldLog == "" || r.NewPin == strings.TrimSpace(string(oldPin)) {
		t.Fatalf("retired %+v", r)
	}
	for _, f := range []string{"audit.log", "audit.key", "audit.pin", "audit.recipient", "audit.anchor"} {
		if _, err := os.Stat(filepath.Join(r.Dir, f)); err != nil {
			t.Errorf("not retired: %v", err)
		}
	}

	// The next gateway starts the new log and unlocks.
	g, sock, stop := runGateway(t, dir)
	if err := unlock(sock); err != nil {
		t.Fatalf("unlock over the new log: %v", err)
	}
	if st := g.Status(); !st.Audit.Enabled || st.Audit.Records == 0 {
		t.Fatalf("the new log: %+v", st.Audit)
	}
	stop()

	// Both logs read with the vault: the retired one with the identity
	// kept for it, the new one with the new identity, and each verifies
	// against the pin beside it.
	for _, p := range []string{r.OldLog, r.LogPath} {
		n := 0
		if err := api.ReadAuditLog(p, open(pass), api.AuditReadOptions{}, func(api.AuditEvent) error { n++; return nil }); err != nil || n == 0 {
			t.Errorf("reading %s: %d events, %v", p, n, err)
		}
		pin, _, err := api.PinBeside(p)
		if err != nil {
			t.Fatal(err)
		}
		if rep, err := api.VerifyAuditLog(p, api.AuditVerifyOptions{PK0: pin, PK0Beside: true}); err != nil || !rep.OK || !rep.PK0Pinned {
			t.Errorf("verifying %s: %+v, %v", p, rep, err)
		}
	}
}

// waitSealedAnchor waits until the vault holds an anchor past seq.
func waitSealedAnchor(t *testing.T, path string, pass []byte, seq uint64) api.AuditAnchor {
	t.Helper()
	var a api.AuditAnchor
	newSealedReader(t, path, pass).waitSecret(api.SecretAuditAnchor, fmt.Sprintf("an anchor past record %d", seq), func(sec []byte) bool {
		var err error
		a, err = api.ParseAnchor(string(sec))
		return err == nil && a.Seq > seq
	})
	return a
}

func auditFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "audit.*"))
	if err != nil || len(m) == 0 {
		t.Fatalf("no audit files in %s (%v)", dir, err)
	}
	return m
}

func copyAudit(t *testing.T, from, to string) {
	t.Helper()
	for _, f := range auditFiles(t, from) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, filepath.Base(f)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func removeAudit(t *testing.T, dir string) {
	t.Helper()
	for _, f := range auditFiles(t, dir) {
		os.Remove(f)
	}
}
