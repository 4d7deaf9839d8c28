package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// "postern vault init" on a running agent: the keys added with ssh-add
// stay (usable again once the new vault is unlocked), and the audit log
// starts recording at once, without a restart; init says so.
func TestVaultInitOnARunningAgent(t *testing.T) {
	need(t, "ssh-add", "ssh-keygen")
	e := newEnv(t)
	e.Config(`approval = "none"`)
	e.StartAgent()
	k := e.Keygen("added", "ed25519", 0, "")
	e.AddKey(k)
	pass := e.WriteFile("pass", "vault pass\n", 0o600)
	out := e.MustRun("postern", "vault", "init", "--passphrase-file", pass).Stdout
	for _, want := range []string{"locked until \"postern unlock\"", "keys added with ssh-add are kept", "records to the audit log"} {
		if !strings.Contains(out, want) {
			t.Errorf("vault init does not say %q:\n%s", want, out)
		}
	}
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
	if l := e.MustRun("ssh-add", "-l").Stdout; !strings.Contains(l, "added") {
		t.Fatalf("the added key is gone after vault init and unlock:\n%s", l)
	}
	msg := e.WriteFile("m", "x", 0o600)
	e.MustRun("ssh-keygen", "-Y", "sign", "-n", "file", "-f", k+".pub", msg)
	st := e.MustRun("postern", "status").Stdout
	if !strings.Contains(st, "audit.log (") {
		t.Fatalf("the audit log did not start:\n%s", st)
	}
	act := e.MustRun("postern", "activity", "--passphrase-file", pass).Stdout
	for _, want := range []string{"gateway_started", "vault_unlocked", "sign "} {
		if !strings.Contains(act, want) {
			t.Errorf("activity lacks %q:\n%s", want, act)
		}
	}
}

// In the foreground (-D) and with a command, postern agent is as silent
// as ssh-agent: the eval lines, or the command's own output, and nothing
// else. -d logs every request.
func TestQuietForegroundAndRequestLog(t *testing.T) {
	need(t, "ssh-add", "ssh-keygen")
	e := newEnv(t)
	e.Config(`approval = "none"`)
	k := e.Keygen("k", "ed25519", 0, "")
	r := e.Run("postern", "agent", "sh", "-c", "ssh-add -q "+k+" && ssh-add -l >/dev/null && echo done")
	if r.Code != 0 || r.Stdout != "done\n" || r.Stderr != "" {
		t.Fatalf("postern agent COMMAND printed more than the command:\n%s", r)
	}

	a := e.StartAgent()
	e.AddKey(k)
	msg := e.WriteFile("m", "x", 0o600)
	e.MustRun("ssh-keygen", "-Y", "sign", "-n", "file", "-f", k+".pub", msg)
	a.Stop()
	cmd := e.Command("postern", "agent", "-D", "-a", e.Path("run", "quiet.sock"))
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256)
	n, _ := out.Read(buf)
	if !strings.HasPrefix(string(buf[:n]), "SSH_AUTH_SOCK=") {
		t.Fatalf("postern agent -D printed %q", buf[:n])
	}
	e.Setenv("SSH_AUTH_SOCK", e.Path("run", "quiet.sock"))
	e.Run("ssh-add", "-l") // no identities: refused, and silently
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	if errb.String() != "" {
		t.Fatalf("postern agent -D logged:\n%s", errb.String())
	}
	if !strings.Contains(a.Log(), "type=SIGN_REQUEST") || !strings.Contains(a.Log(), "answer=SIGN_RESPONSE") {
		t.Fatalf("-d does not log each request:\n%s", a.Log())
	}
}

// A run whose command cannot start leaves nothing behind: no run, no
// socket.
func TestFailedRunLeavesNothing(t *testing.T) {
	e := newEnv(t)
	a := e.StartAgent()
	r := e.Run("postern", "run", "--", "/nonexistent")
	if r.Code == 0 || !strings.Contains(r.Stderr, "/nonexistent") {
		t.Fatalf("postern run -- /nonexistent: %s", r)
	}
	waitFor(t, func() bool {
		socks, _ := filepath.Glob(a.Socket + ".run-*")
		out := e.MustRun("postern", "sessions").Stdout
		return len(socks) == 0 && !strings.Contains(out, "run R")
	})
}
