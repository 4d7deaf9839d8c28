package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A host the person's ssh -A logged in to reaches the agent through the
// forwarded socket: it may ask for signatures (each decided here), but is
// not told what the gateway decided for the person's other programs
// (why@postern), neither their hosts nor their signatures' namespaces.
func TestForwardedAgentIsNotToldWhy(t *testing.T) {
	need(t, "ssh", "ssh-keygen", "sshd")
	w := newApprovalWorld(t, "")
	e := w.e
	// A signature the person refused, in a namespace of their own.
	msg := e.WriteFile("msg.txt", "private\n", 0o600)
	sign := e.Command("ssh-keygen", "-Y", "sign", "-n", "payroll-release", "-f", w.key+".pub", msg)
	if err := sign.Start(); err != nil {
		t.Fatal(err)
	}
	e.MustRun("postern", "deny", e.WaitCard().ID)
	sign.Wait()
	if out := e.MustRun("postern", "why", "--json").Stdout; !strings.Contains(out, "payroll-release") {
		t.Fatalf("the person's own why does not name the signature's namespace:\n%s", out)
	}

	// The login itself uses a key file: the agent is only forwarded.
	login := e.Keygen("login", "ed25519", 0, "")
	f, err := os.OpenFile(filepath.Join(w.sshd.Dir, "authorized_keys"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(pubKey(t, login) + "\n")
	f.Close()
	r := e.Run("ssh", w.sshd.SSHArgs("-A", "-o", "IdentitiesOnly=yes", "-o", "IdentityFile="+login,
		w.sshd.Target(), posternBin, "why", "--json")...)
	if strings.Contains(r.Stdout+r.Stderr, "payroll-release") {
		t.Fatalf("the host the agent was forwarded to was told what the gateway decided for the person's programs:\n%s", r)
	}
	if r.Code == 0 || !strings.Contains(r.Stderr, "forwarded") {
		t.Fatalf("postern why through a forwarded agent: want a refusal that says the connection is forwarded:\n%s", r)
	}
}
