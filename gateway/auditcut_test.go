package gateway

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/vault"
)

// A program with the person's uid puts back an older copy of the log and
// its key file, and leaves the first bytes of a record after its end, as
// a crash leaves a torn write. The log the gateway finds ends before the
// anchor beside it; opening it adds records of its own (the recovery, a
// checkpoint) that reach the anchor's seq again. The check must count
// what was found, not what was added, or the records after the copy are
// lost without a trace.
func TestStartRefusesAnOlderCopyWithATornTail(t *testing.T) {
	dir := gatewayHome(t)
	vaultPath := initTestVault(t, []byte("cut pass"))
	state := filepath.Dir(vaultPath)
	logPath := filepath.Join(state, "audit.log")
	keyPath := filepath.Join(state, "audit.key")
	_, _, stop := runGateway(t, dir)
	stop()

	// An event is recorded; the older copy is taken after it, before it
	// is sealed; then one more event, sealed and anchored, as a gateway
	// does.
	setup, err := audit.LoadSetup(state)
	if err != nil {
		t.Fatal(err)
	}
	var last audit.Anchor
	cfg := setup.Config(logPath)
	cfg.OnCheckpoint = func(a audit.Anchor) { last = a }
	l, err := audit.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(audit.Event{Type: audit.EventSign, Run: "R1"}); err != nil {
		t.Fatal(err)
	}
	older := map[string][]byte{}
	for _, p := range []string{logPath, keyPath} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		older[p] = b
	}
	if err := l.Append(audit.Event{Type: audit.EventSign, Run: "R2"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "audit.anchor"), []byte(api.FormatAnchor(last)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// The older copy put back, with the first bytes of a record after
	// its end.
	for p, b := range older {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := audit.VerifyPath(logPath, audit.VerifyOptions{})
	if err != nil || !rep.OK || rep.Torn != nil || rep.UnsealedEntries != 1 {
		t.Fatalf("the older copy: %+v, %v", rep, err)
	}
	b := older[logPath]
	end := rep.Bytes
	copy(b[end:], b[end-100:end-80]) // 20 bytes from within the last record
	binary.BigEndian.PutUint32(b[end:], 100)
	binary.BigEndian.PutUint32(b[end+4:], ^uint32(100))
	if err := os.WriteFile(logPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if rep, err := audit.VerifyPath(logPath, audit.VerifyOptions{}); err != nil || !rep.OK || rep.Torn == nil || rep.Head.Seq+2 != last.Seq {
		t.Fatalf("the older copy with a torn tail: %+v, %v; anchor %+v", rep, err, last)
	}

	// Refused, and refused again at the next start: the first must not
	// have added records that bring the copy up to the anchor.
	for start := 1; start <= 2; start++ {
		g, err := New(Options{Socket: filepath.Join(dir, "xdg_runtime_dir", "agent.sock")})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		done := make(chan error, 1)
		go func() { done <- g.Run(ctx) }()
		select {
		case err := <-done:
			cancel()
			if !errors.Is(err, audit.ErrDamaged) || !errors.Is(err, errAuditRolledBack) {
				t.Fatalf("start %d over an older copy: %v; want it called an older copy (%v)", start, err, errAuditRolledBack)
			}
			t.Log(err)
		case <-time.After(5 * time.Second):
			cancel()
			<-done
			t.Fatalf("start %d: the gateway started over an older copy of the log that ended at seq %d, before the anchor at seq %d beside it", start, rep.Head.Seq, last.Seq)
		}
	}
}

// The whole directory is put back, the anchor beside the log with it,
// with a torn tail after the log's end; only the anchor sealed into the
// vault is newer. The unlock is refused, and refused again after a
// restart, although the first gateway's own records (the recovery,
// checkpoints) have brought the log up to the sealed anchor's seq: the
// record there is not the one the anchor names.
func TestUnlockRefusesAnOlderCopyAfterARestart(t *testing.T) {
	pass := []byte("cut pass")
	dir := gatewayHome(t)
	vaultPath := initTestVault(t, pass)
	state := filepath.Dir(vaultPath)
	logPath := filepath.Join(state, "audit.log")
	_, _, stop := runGateway(t, dir)
	stop()

	setup, err := audit.LoadSetup(state)
	if err != nil {
		t.Fatal(err)
	}
	var last audit.Anchor
	cfg := setup.Config(logPath)
	cfg.OnCheckpoint = func(a audit.Anchor) { last = a }
	l, err := audit.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(audit.Event{Type: audit.EventSign, Run: "R1"}); err != nil {
		t.Fatal(err)
	}
	older := map[string][]byte{}
	for _, p := range auditFiles(t, state) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		older[p] = b
	}
	if err := l.Append(audit.Event{Type: audit.EventSign, Run: "R2"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	v, err := vault.Open(vaultPath, bytes.Clone(pass))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.SetSecret(api.SecretAuditAnchor, []byte(api.FormatAnchor(last)+"\n")); err != nil {
		t.Fatal(err)
	}
	if err := v.Save(); err != nil {
		t.Fatal(err)
	}
	v.Wipe()

	removeAudit(t, state)
	for p, b := range older {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := audit.VerifyPath(logPath, audit.VerifyOptions{})
	if err != nil || !rep.OK || rep.UnsealedEntries != 1 {
		t.Fatalf("the older copy: %+v, %v", rep, err)
	}
	b := older[logPath]
	end := rep.Bytes
	binary.BigEndian.PutUint32(b[end:], 100)
	binary.BigEndian.PutUint32(b[end+4:], ^uint32(100))
	b[end+8] = 2
	if err := os.WriteFile(logPath, b, 0o600); err != nil {
		t.Fatal(err)
	}

	for start := 1; start <= 2; start++ {
		_, sock, stop := runGateway(t, dir)
		err := api.NewClient(sock).Unlock(context.Background(), api.UnlockArgs{Passphrase: bytes.Clone(pass)})
		stop()
		if !api.HasCode(err, api.CodeAuditRolledBack) {
			t.Fatalf("unlock %d over an older copy (it ended at seq %d, the vault's anchor names seq %d): %v", start, rep.Head.Seq, last.Seq, err)
		}
	}
}
