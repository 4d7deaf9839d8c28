package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A host the person's ssh -A logged in to reaches the agent through the
// forwarded socket: it may ask for signatures, each decided here, and no
// more of the gateway.

// forwardedTo returns a function that runs a command, with stdin, on the
// host of w's sshd, logged in to with a key file of its own and the agent
// only forwarded (ssh -A).
func forwardedTo(t *testing.T, w *approvalWorld) func(stdin string, command ...string) Result {
	login := w.e.Keygen("login", "ed25519", 0, "")
	f, err := os.OpenFile(filepath.Join(w.sshd.Dir, "authorized_keys"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(pubKey(t, login) + "\n")
	f.Close()
	return func(stdin string, command ...string) Result {
		t.Helper()
		return w.e.RunInput(stdin, "ssh", w.sshd.SSHArgs(append([]string{"-A", "-o", "IdentitiesOnly=yes", "-o", "IdentityFile=" + login,
			w.sshd.Target()}, command...)...)...)
	}
}

// The host is not told what the gateway decided for the person's
// programs (why@postern), neither their hosts nor their signatures'
// namespaces.
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

	r := forwardedTo(t, w)("", posternBin, "why", "--json")
	if strings.Contains(r.Stdout+r.Stderr, "payroll-release") {
		t.Fatalf("the host the agent was forwarded to was told what the gateway decided for the person's programs:\n%s", r)
	}
	if r.Code == 0 || !strings.Contains(r.Stderr, "forwarded") {
		t.Fatalf("postern why through a forwarded agent: want a refusal that says the connection is forwarded:\n%s", r)
	}
}

// The host neither unlocks the vault (ssh-add -X takes the vault's
// passphrase: a host would guess it, or lift the person's lock) nor
// locks the person out (ssh-add -x).
func TestForwardedAgentNeitherUnlocksNorLocks(t *testing.T) {
	need(t, "ssh", "ssh-add", "sshd")
	w := newApprovalWorld(t, "")
	e := w.e
	remote := forwardedTo(t, w)
	vaultState := func() string {
		t.Helper()
		st := e.MustRun("postern", "status", "--json").Stdout
		for _, s := range []string{"locked", "unlocked"} {
			if strings.Contains(st, `"state": "`+s+`"`) {
				return s
			}
		}
		t.Fatalf("no vault state in:\n%s", st)
		return ""
	}
	e.MustRun("postern", "lock")
	if r := remote("vault pass\n", "ssh-add", "-X"); r.Code == 0 || vaultState() != "locked" {
		t.Fatalf("ssh-add -X through the forwarded agent unlocked the vault (%s): %s", vaultState(), r)
	}
	e.MustRun("postern", "unlock", "--passphrase-file", w.pass)
	if r := remote("pw\npw\n", "ssh-add", "-x"); r.Code == 0 || vaultState() != "unlocked" {
		t.Fatalf("ssh-add -x through the forwarded agent locked the vault (%s): %s", vaultState(), r)
	}
	if !strings.Contains(w.agent.Log(), "refusing to lock or unlock the agent through ssh") {
		t.Fatalf("the log does not say why:\n%s", w.agent.Log())
	}
}
