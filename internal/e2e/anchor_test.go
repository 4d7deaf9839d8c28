package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/postern/postern/gateway/api"
)

// An older copy of the audit log put back in place is a valid log: only
// an anchor kept outside it shows that records were cut from its end.
// "postern audit verify" checks the anchor beside the log, an anchor given
// with --anchor (a line or a file kept elsewhere) and, with --vault, the
// one sealed into the vault; each catches the older copy the ones before
// it miss.
func TestAuditVerifyAnchorCatchesAnOlderCopy(t *testing.T) {
	need(t, "ssh-keygen")
	e := newEnv(t)
	pass := e.WriteFile("pass", "vault pass\n", 0o600)
	e.MustRun("postern", "vault", "init", "--passphrase-file", pass)
	k := e.Keygen("k", "ed25519", 0, "")
	e.MustRun("postern", "vault", "add", "--passphrase-file", pass, k)
	e.Config("approval = \"none\"\n")
	msg := e.WriteFile("m", "signed", 0o600)
	state := e.Path("state", "postern")
	session := func() {
		a := e.StartAgent()
		e.MustRun("postern", "unlock", "--passphrase-file", pass) // a checkpoint, sealed into the vault
		e.MustRun("ssh-keygen", "-Y", "sign", "-n", "file", "-f", k+".pub", msg)
		e.MustRun("postern", "lock")
		a.Stop()
	}
	session()
	old := t.TempDir()
	copyGlob(t, filepath.Join(state, "audit.log*"), old)
	copyGlob(t, filepath.Join(state, "audit.anchor"), old)
	session()

	anchorLine := strings.TrimSpace(string(mustRead(t, filepath.Join(state, "audit.anchor"))))
	kept := e.WriteFile("kept-elsewhere", anchorLine+"\n", 0o600)
	latest, err := api.ParseAnchor(anchorLine)
	if err != nil {
		t.Fatal(err)
	}
	sealed := e.MustRun("postern", "audit", "verify", "--vault", "--passphrase-file", pass).Stdout
	if !strings.Contains(sealed, ": OK") || !strings.Contains(sealed, "anchor from the vault") {
		t.Fatalf("the current log against the vault's anchor:\n%s", sealed)
	}
	r := e.MustRun("postern", "audit", "verify", "--anchor", anchorLine, "--anchor", kept)
	if !strings.Contains(r.Stdout, ": OK") || strings.Count(r.Stdout, "anchor from --anchor") != 2 {
		t.Fatalf("the current log against its anchors:\n%s", r.Stdout)
	}

	// The older log put back, its newer anchor left beside it.
	restore := func(what string) {
		t.Helper()
		if what == "audit.log*" {
			ms, _ := filepath.Glob(filepath.Join(state, what))
			for _, m := range ms {
				os.Remove(m)
			}
		}
		copyGlob(t, filepath.Join(old, what), state)
	}
	restore("audit.log*")
	r = e.Run("postern", "audit", "verify")
	if r.Code != 3 || !strings.Contains(r.Stdout, "FAILED") || !strings.Contains(r.Stdout, "records were cut from the end") {
		t.Fatalf("an older log beside a newer anchor: %s", r)
	}
	// The older anchor put back too: the log and the anchor beside it
	// agree, and only an anchor from elsewhere tells.
	restore("audit.anchor")
	if r = e.Run("postern", "audit", "verify"); r.Code != 0 {
		t.Fatalf("an older log with its own anchor: %s", r)
	}
	for _, args := range [][]string{
		{"--anchor", kept},
		{"--anchor", anchorLine},
		{"--vault", "--passphrase-file", pass},
	} {
		r = e.Run("postern", append([]string{"audit", "verify", "--json"}, args...)...)
		if r.Code != 3 || !strings.Contains(r.Stdout, `"truncated"`) {
			t.Fatalf("verify %v over the older copy: %s", args, r)
		}
	}
	if latest.Seq == 0 {
		t.Fatalf("anchor %+v", latest)
	}
	// A malformed --anchor is a usage error, not a verdict.
	if r = e.Run("postern", "audit", "verify", "--anchor", "postern-audit-anchor 1 nonsense"); r.Code != 2 {
		t.Fatalf("a malformed anchor: %s", r)
	}
}

// copyGlob copies the files matching pattern into dir.
func copyGlob(t testing.TB, pattern, dir string) {
	t.Helper()
	ms, err := filepath.Glob(pattern)
	if err != nil || len(ms) == 0 {
		t.Fatalf("nothing matches %s (%v)", pattern, err)
	}
	for _, m := range ms {
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(m)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
