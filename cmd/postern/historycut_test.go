package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/gateway/api"
)

// sessions --history over a log that fails verification lists the
// sessions approved in the part that verified, their end not known, as
// well as those that ended there: a session still open where the log
// stops verifying is not left out as if it had never been approved.
func TestHistoryOfADamagedLogListsTheSessionsOpenWhereItStops(t *testing.T) {
	dir := tempHome(t)
	pass := filepath.Join(dir, "pass")
	if err := os.WriteFile(pass, []byte("correct horse battery staple\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errw strings.Builder
	if code := run([]string{"vault", "init", "--passphrase-file", pass}, &out, &errw); code != 0 {
		t.Fatalf("vault init: %d %s", code, errw.String())
	}
	state := filepath.Join(dir, "postern")
	s, err := audit.LoadSetup(state)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(state, "audit.log")
	l, err := audit.Open(s.Config(path))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []audit.Event{
		{Type: audit.EventSessionApproved, BootID: "B1", Run: "R1", Grant: "Gended"},
		{Type: audit.EventSessionEnded, BootID: "B1", Run: "R1", Grant: "Gended", Reason: audit.ReasonRevoked},
		{Type: audit.EventSessionApproved, BootID: "B1", Run: "R2", Grant: "Gopen"},
		{Type: audit.EventSign, BootID: "B1", Run: "R2", Grant: "Gopen"},
	} {
		if err := l.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(audit.Event{Type: audit.EventSign, BootID: "B1", Run: "R2", Grant: "Gopen"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Damage that last record, inside its body, and put one more after
	// it: damage in the log's last record may read as a write a crash cut
	// short (when its last bytes are zero), which is no verification
	// failure.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	damage := len(bytes.TrimRight(b, "\x00")) - 40
	if l, err = audit.Open(s.Config(path)); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(audit.Event{Type: audit.EventSign, BootID: "B1", Run: "R2", Grant: "Gopen"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err = os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	b[damage] ^= 0xff
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errw.Reset()
	code := run([]string{"sessions", "--history", "--offline", "--passphrase-file", pass}, &out, &errw)
	if code != exitAudit {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitAudit, out.String(), errw.String())
	}
	if !strings.Contains(out.String(), "Gended") {
		t.Fatalf("the ended session is not listed:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "Gopen") {
		t.Fatalf("the session open where the log stops verifying is not listed:\n%s%s", out.String(), errw.String())
	}
	if strings.Contains(out.String(), ", open") {
		t.Fatalf("a session whose end is past the damage is shown as open:\n%s", out.String())
	}
	// In JSON too: a script that reads the sessions before the cut
	// tells the one whose end is not known from one the log shows open.
	out.Reset()
	errw.Reset()
	if code := run([]string{"sessions", "--history", "--json", "--offline", "--passphrase-file", pass}, &out, &errw); code != exitAudit {
		t.Fatalf("--json: exit %d, want %d\n%s%s", code, exitAudit, out.String(), errw.String())
	}
	dec := json.NewDecoder(strings.NewReader(out.String()))
	dec.Token() // [
	unknown := map[string]bool{}
	for dec.More() {
		var s api.AuditSession
		if err := dec.Decode(&s); err != nil {
			t.Fatalf("%v in:\n%s", err, out.String())
		}
		unknown[s.Grant] = s.EndUnknown
	}
	if len(unknown) != 2 || !unknown["Gopen"] || unknown["Gended"] {
		t.Fatalf("--json marks the end unknown of %v:\n%s", unknown, out.String())
	}
}
