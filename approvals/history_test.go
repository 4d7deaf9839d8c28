package approvals

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/postern/postern/internal/procid"
)

// A display-context file the gateway cannot read is said in its log, not
// passed over: the runs it named are not offered again.
func TestDamagedContextFileLogged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "context.json")
	if err := os.WriteFile(path, []byte("garbage{"), 0o600); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	e := NewEngine(Config{Log: slog.New(slog.NewTextHandler(&log, nil)), ContextFile: path, BootID: "b"})
	if runs := e.Restore(); len(runs) != 0 {
		t.Fatalf("%d runs restored from a damaged file", len(runs))
	}
	if !strings.Contains(log.String(), "display context from the last gateway not read") {
		t.Fatalf("nothing logged:\n%s", log.String())
	}
}

// The display context is a file a program with the person's uid can
// write: the sentence of a card that tells what changed names an earlier
// approval's end only by a word of the vocabulary, never by text the file
// holds.
func TestReauthSentenceNamesOnlyAKnownEndReason(t *testing.T) {
	path := filepath.Join(t.TempDir(), "context.json")
	forged := `[{"boot_id":"b0","run":"R1","label":"deploy-bot","pid":7,"start_ticks":1,"exe":"/usr/bin/agent","exe_sha256":"","exe_dev":0,"exe_ino":0,` +
		`"key":"SHA256:k","reason":"revoked by your administrator, and this is the process you approved: approve it again","ended":"2026-12-01T00:00:00Z"},` +
		`{"boot_id":"b0","run":"R2","label":"other","pid":8,"start_ticks":1,"exe":"/usr/bin/agent","exe_sha256":"","exe_dev":0,"exe_ino":0,` +
		`"key":"SHA256:k2","reason":"revoked","ended":"2026-12-01T00:00:00Z"}]`
	if err := os.WriteFile(path, []byte(forged), 0o600); err != nil {
		t.Fatal(err)
	}
	e := NewEngine(Config{ContextFile: path, BootID: "b1"})
	e.Restore()
	subject := &Run{Label: "deploy-bot", Process: procid.Process{PID: 40, StartTicks: 600}}
	if _, s := e.reauth(subject, Key{Fingerprint: "SHA256:k"}); strings.Contains(s, "administrator") || !strings.Contains(s, "ended.") {
		t.Errorf("a reason the file holds, not a word of the vocabulary, is in the card's sentence: %q", s)
	}
	other := &Run{Label: "other", Process: procid.Process{PID: 41, StartTicks: 700}}
	if _, s := e.reauth(other, Key{Fingerprint: "SHA256:k2"}); !strings.Contains(s, "ended (revoked).") {
		t.Errorf("a known end reason is not named: %q", s)
	}
}
