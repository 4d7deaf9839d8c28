package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// What a person found out (--evidence) goes with what it shows (--ran,
// --not-started, ...): given alone, resolve read the markers and dropped
// it, or said it needed a gateway, never that it was not taken.
func TestJournalResolveEvidenceNeedsAResult(t *testing.T) {
	dir := t.TempDir()
	for _, v := range []string{"XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR", "HOME"} {
		t.Setenv(v, dir)
	}
	t.Setenv("SSH_AUTH_SOCK", filepath.Join(dir, "agent.sock"))
	var out, errw strings.Builder
	code := run([]string{"journal", "resolve", "01M91G6N375J", "--evidence", "ps on the host shows it ran"}, &out, &errw)
	if code != exitUsage || !strings.Contains(errw.String(), "--evidence") {
		t.Fatalf("resolve with --evidence alone: exit %d, %q", code, errw.String())
	}
}
