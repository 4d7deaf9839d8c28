package gateway

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/postern/postern/internal/syncbuf"
	"github.com/postern/postern/internal/xdg"
)

// An audit.anchor beside the log that cannot be read (emptied, garbage,
// something else in its place) holds the log to nothing when the gateway
// opens it: the gateway says so, naming the file, where it passed over it
// without a word, as if there were none.
func TestDamagedAuditAnchorIsLogged(t *testing.T) {
	dir := gatewayHome(t)
	vaultPath := initTestVault(t, []byte("anchor pass"))
	anchor := filepath.Join(filepath.Dir(vaultPath), xdg.AuditAnchorFile)
	_, _, stop := runGateway(t, dir)
	stop()
	if _, err := os.Stat(anchor); err != nil {
		t.Fatalf("no anchor after a gateway ran: %v", err)
	}
	if err := os.WriteFile(anchor, []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var log syncbuf.Buffer
	runGatewayWith(t, dir, Options{Log: slog.New(slog.NewTextHandler(&log, nil))})
	if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), anchor) {
		t.Fatalf("the gateway opened its audit log beside a damaged anchor and said nothing of it:\n%s", log.String())
	}
}

// A vault generation anchor (vault.generation) that cannot be read is
// written anew at the unlock, and the log says that this unlock made no
// check that the vault is no older copy, naming the file.
func TestDamagedVaultGenerationAnchorIsLogged(t *testing.T) {
	dir := gatewayHome(t)
	pass := []byte("anchor pass")
	vaultPath := initTestVault(t, pass)
	_, sock, stop := runGateway(t, dir)
	unlockGateway(t, sock, pass)
	stop()
	anchor := vaultPath + ".generation"
	if err := os.WriteFile(anchor, []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var log syncbuf.Buffer
	_, sock, _ = runGatewayWith(t, dir, Options{Log: slog.New(slog.NewTextHandler(&log, nil))})
	unlockGateway(t, sock, pass)
	if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), anchor) {
		t.Fatalf("the vault was unlocked beside a damaged generation anchor and the log says nothing of it:\n%s", log.String())
	}
}
