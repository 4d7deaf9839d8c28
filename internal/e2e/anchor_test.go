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
	e, pass, old := olderAuditCopy(t)
	state := e.Path("state", "postern")

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
	putBack(t, old, state, "audit.log*")
	r = e.Run("postern", "audit", "verify")
	if r.Code != 3 || !strings.Contains(r.Stdout, "FAILED") || !strings.Contains(r.Stdout, "records were cut from the end") {
		t.Fatalf("an older log beside a newer anchor: %s", r)
	}
	// The older anchor put back too: the log and the anchor beside it
	// agree, and only an anchor from elsewhere tells.
	putBack(t, old, state, "audit.anchor")
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

// olderAuditCopy runs two gateway sessions, each unlocking (a checkpoint
// sealed into the vault) and signing, and returns the environment, the
// passphrase file and a directory holding the audit log, its anchor and
// its signing key file as they were after the first.
func olderAuditCopy(t *testing.T) (e *Env, pass, old string) {
	t.Helper()
	need(t, "ssh-keygen")
	e = newEnv(t)
	pass = e.WriteFile("pass", "vault pass\n", 0o600)
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
	old = t.TempDir()
	for _, f := range []string{"audit.log*", "audit.anchor", "audit.key"} {
		copyGlob(t, filepath.Join(state, f), old)
	}
	session()
	return e, pass, old
}

// putBack replaces the files of state matching pattern with those kept
// in old.
func putBack(t *testing.T, old, state, pattern string) {
	t.Helper()
	ms, _ := filepath.Glob(filepath.Join(state, pattern))
	for _, m := range ms {
		os.Remove(m)
	}
	copyGlob(t, filepath.Join(old, pattern), state)
}

// A gateway does not go on writing an older copy of its audit log put back
// in place while it was stopped, which would overwrite the anchors that
// show it: with the newer audit.anchor beside it, it does not start; with
// the older anchor put back too, it starts, but the vault does not unlock
// (its sealed anchor is past the log's end) and keeps that anchor. With
// the newer log back, it unlocks.
func TestGatewayRefusesAnOlderAuditLog(t *testing.T) {
	e, pass, old := olderAuditCopy(t)
	state := e.Path("state", "postern")
	newer := t.TempDir()
	for _, f := range []string{"audit.log*", "audit.anchor", "audit.key"} {
		copyGlob(t, filepath.Join(state, f), newer)
	}

	// The log and its key file (whose epoch would give the log away) put
	// back.
	putBack(t, old, state, "audit.log*")
	putBack(t, old, state, "audit.key")
	r := e.Run("postern", "agent", "-D", "-a", e.Path("run", "refused.sock"))
	if r.Code != 1 || !strings.Contains(r.Stderr, "older copy") || !strings.Contains(r.Stderr, "audit.anchor records record") ||
		!strings.Contains(r.Stderr, "postern: hint: ") {
		t.Fatalf("a gateway over an older log beside a newer anchor: %s", r)
	}

	putBack(t, old, state, "audit.anchor")
	a := e.StartAgent()
	r = e.Run("postern", "unlock", "--passphrase-file", pass)
	if r.Code != 1 || !strings.Contains(r.Stderr, "older copy") || !strings.Contains(r.Stderr, "sealed into the vault records record") ||
		!strings.Contains(r.Stderr, "postern audit verify --vault") {
		t.Fatalf("unlock over an older log with its own anchor: %s", r)
	}
	if st := status(t, e); st.Vault.State != "locked" {
		t.Fatalf("after the refused unlock: %+v", st)
	}
	a.Stop()
	r = e.Run("postern", "audit", "verify", "--vault", "--passphrase-file", pass)
	if r.Code != 3 {
		t.Fatalf("the vault's anchor was overwritten: verify --vault %s", r)
	}

	// The newer log put back, the vault unlocks.
	for _, f := range []string{"audit.log*", "audit.anchor", "audit.key"} {
		putBack(t, newer, state, f)
	}
	e.StartAgent()
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
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

// The commands that read the history with the vault hold the state
// directory's log to what the vault keeps of it, as verify --vault does:
// an older copy put back with its older anchor is shown, and then fails
// (exit 3: records were cut from its end), never passed as the whole
// history; a log replaced by another fails the vault's first checkpoint
// key.
func TestHistoryOfAnOlderCopyFails(t *testing.T) {
	e, pass, old := olderAuditCopy(t)
	state := e.Path("state", "postern")
	cur := t.TempDir()
	copyGlob(t, filepath.Join(state, "audit.log*"), cur)
	copyGlob(t, filepath.Join(state, "audit.anchor"), cur)
	for _, args := range [][]string{{"activity"}, {"audit", "show"}, {"sessions", "--history"}} {
		if r := e.Run("postern", append(args, "--passphrase-file", pass)...); r.Code != 0 {
			t.Fatalf("%v of the current log: %s", args, r)
		}
	}
	putBack(t, old, state, "audit.log*")
	putBack(t, old, state, "audit.anchor")
	for _, args := range [][]string{{"activity"}, {"audit", "show"}, {"sessions", "--history"}} {
		r := e.Run("postern", append(args, "--passphrase-file", pass)...)
		if r.Code != 3 || !strings.Contains(r.Stderr, "records were cut from the end") || !strings.Contains(r.Stderr, `"postern audit verify --vault" names the first bad record`) {
			t.Errorf("%v of an older copy put back with its anchor: %s", args, r)
		}
	}
	// The same put back under a running gateway, which reads the log for
	// these commands while its vault is unlocked.
	putBack(t, cur, state, "audit.log*")
	putBack(t, cur, state, "audit.anchor")
	e.StartAgent()
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
	putBack(t, old, state, "audit.log*")
	putBack(t, old, state, "audit.anchor")
	if r := e.Run("postern", "activity"); r.Code != 3 || !strings.Contains(r.Stderr, "records were cut from the end") {
		t.Errorf("activity, through the gateway, of an older copy put back with its anchor: %s", r)
	}
}
