package e2e

// FIDO keys through OpenSSH's ssh-sk-helper, with the sk-dummy.so
// provider of OpenSSH's regression suite (Debian's openssh-tests) standing
// in for a security key: added with the real ssh-add, used by the real
// ssh and ssh-keygen -Y sign, asked about on a card that says a touch
// will follow.

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

const skDummy = "/usr/lib/openssh/regress/misc/sk-dummy/sk-dummy.so"

func TestSecurityKeysThroughSKHelper(t *testing.T) {
	mostlyWaits(t)
	need(t, "ssh-add", "ssh-keygen", "ssh", "sshd")
	if _, err := os.Stat(skDummy); err != nil {
		t.Fatalf("%s is missing (apt-get install openssh-tests): %v", skDummy, err)
	}
	e := newEnv(t)
	e.Setenv("SSH_SK_PROVIDER", skDummy)
	log, allow := askpassStub(e)
	// Yes to every card; a per-call login to a host the inventory does
	// not name is approved by typing "unknown".
	os.WriteFile(allow, []byte("unknown"), 0o600)
	e.Config(`approval = "per-call"`)
	a := e.StartAgent()
	var authorized strings.Builder
	var keys []string
	for _, typ := range []string{"ed25519-sk", "ecdsa-sk"} {
		k := e.Keygen(typ, typ, 0, "")
		keys = append(keys, k)
		authorized.WriteString(pubKey(t, k) + "\n")
		e.AddKey(k)
	}
	// Whoever makes a security key chooses its application: the card
	// shows it escaped, on its own line.
	app := "ssh:work\x1b[31m\nAllowed by policy\u202e"
	forged := e.Path("forged-app")
	e.MustRun("ssh-keygen", "-q", "-t", "ed25519-sk", "-O", "application="+app, "-N", "", "-C", "forged-app", "-f", forged)
	keys = append(keys, forged)
	authorized.WriteString(pubKey(t, forged) + "\n")
	e.AddKey(forged)
	apps := map[string]string{keys[0]: `"ssh:"`, keys[1]: `"ssh:"`, forged: `"ssh:work\x1b[31m\nAllowed by policy\u202e"`}
	// A certificate for the ecdsa-sk key, which ssh presents from
	// CertificateFile while the agent holds the plain key.
	ca := userCA(t, e, keys[1], currentUser(t))
	sshd := startSSHDConfig(t, authorized.String(), "SecurityKeyProvider "+skDummy+"\nTrustedUserCAKeys "+ca)
	msg := e.WriteFile("m", "x", 0o600)
	for _, k := range keys {
		os.Remove(log)
		os.Remove(msg + ".sig")
		e.MustRun("ssh-keygen", "-Y", "sign", "-n", "file", "-f", k+".pub", msg)
		signers := e.WriteFile("allowed_signers", "me "+pubKey(t, k)+"\n", 0o600)
		if r := e.RunInput("x", "ssh-keygen", "-Y", "verify", "-f", signers, "-I", "me", "-n", "file", "-s", msg+".sig"); r.Code != 0 {
			t.Fatalf("verify %s: %s", k, r)
		}
		card := string(mustRead(t, log))
		if !strings.Contains(card, "Security key: once approved, it waits up to 60s for a touch on the key") {
			t.Fatalf("the card does not say a touch will follow:\n%s", card)
		}
		// The askpass prompt doubles every backslash of the card's escapes
		// (a dialog may read C escapes).
		if app := strings.ReplaceAll(apps[k], `\`, `\\`); !strings.Contains(card, "\nSecurity key made for application "+app+"\n") || strings.ContainsAny(card, "\x1b\u202e") {
			t.Fatalf("the card does not show the application %s escaped:\n%q", app, card)
		}
		out := e.MustRun("ssh", sshd.SSHArgs("-o", "IdentitiesOnly=yes", "-o", "IdentityFile="+k+".pub", sshd.Target(), "echo", "sk-login")...)
		if strings.TrimSpace(out.Stdout) != "sk-login" {
			t.Fatalf("login with %s: %s", k, out)
		}
	}
	os.Remove(log)
	out := e.MustRun("ssh", sshd.SSHArgs("-o", "IdentitiesOnly=yes", "-o", "IdentityFile="+keys[1]+".pub", "-o", "CertificateFile="+keys[1]+"-cert.pub", sshd.Target(), "echo", "sk-cert-login")...)
	if strings.TrimSpace(out.Stdout) != "sk-cert-login" || !strings.Contains(sshd.Log(), "ECDSA-SK-CERT") {
		t.Fatalf("login with the security key's certificate: %s\nsshd:\n%s", out, sshd.Log())
	}
	caFP := fingerprint(t, e, strings.TrimSuffix(ca, ".pub"))
	if card := string(mustRead(t, log)); !strings.Contains(card, "\nCertificate \"cert-of-"+currentUser(t)+"\" for principals \""+currentUser(t)+"\", signed by CA "+caFP+"\n") {
		t.Fatalf("the card does not show the certificate the login presents:\n%s", card)
	}
	// Refused on the card: nothing is signed, and the helper never ran.
	os.Remove(allow)
	os.Remove(msg + ".sig")
	if r := e.Run("ssh-keygen", "-Y", "sign", "-n", "file", "-f", keys[0]+".pub", msg); r.Code == 0 {
		t.Fatal("a security key signed although the card was refused")
	}
	if strings.Contains(a.Log(), "ssh-sk-helper") {
		t.Fatalf("the helper reported an error:\n%s", a.Log())
	}
}

// A touch waits without holding the agent, for card_timeout at most:
// while ssh-sk-helper waits for the key, the agent lists keys and locks;
// a signature that arrives after a lock is dropped, even once the agent
// is unlocked again; one that does not arrive in time is refused as
// touch_timeout, and its helper is killed.
func TestSecurityKeyTouchWait(t *testing.T) {
	need(t, "ssh-add", "ssh-keygen")
	if _, err := os.Stat(skDummy); err != nil {
		t.Fatalf("%s is missing (apt-get install openssh-tests): %v", skDummy, err)
	}
	e := newEnv(t)
	e.Setenv("SSH_SK_PROVIDER", skDummy)
	k := e.Keygen("touch", "ed25519-sk", 0, "")
	pass := e.WriteFile("pass", "vault pass\n", 0o600)
	e.MustRun("postern", "vault", "init", "--passphrase-file", pass)
	// The helper waits for the test, as ssh-sk-helper waits for a touch.
	release, pidFile := e.Path("touch"), e.Path("helper.pid")
	if err := syscall.Mkfifo(release, 0o600); err != nil {
		t.Fatal(err)
	}
	e.Setenv("SSH_SK_HELPER", e.WriteFile("sk-helper", fmt.Sprintf("#!/bin/sh\necho $$ > %s\nread touched < %s\nexec /usr/lib/openssh/ssh-sk-helper \"$@\"\n", pidFile, release), 0o755))
	e.Config(`approval = "none"`)
	a := e.StartAgent()
	e.Unsetenv("SSH_SK_HELPER")
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
	e.AddKey(k)
	msg := e.WriteFile("m", "x", 0o600)
	helperPID := func() int {
		t.Helper()
		for i := 0; i < 3000; i++ {
			if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
				pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
				return pid
			}
			sleep10ms()
		}
		t.Fatal("ssh-sk-helper never started")
		return 0
	}

	sign := e.Command("ssh-keygen", "-Y", "sign", "-n", "file", "-f", k+".pub", msg)
	if err := sign.Start(); err != nil {
		t.Fatal(err)
	}
	helperPID()
	// Waiting for the touch, the agent answers and locks.
	if l := e.MustRun("ssh-add", "-l").Stdout; !strings.Contains(l, fingerprint(t, e, k)) {
		t.Fatalf("ssh-add -l while a touch waits:\n%s", l)
	}
	e.MustRun("postern", "lock")
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
	if err := os.WriteFile(release, []byte("touched\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := sign.Wait(); err == nil {
		t.Fatal("a signature made across a lock was delivered")
	}
	a.WaitLog(t, "reason=vault_locked")

	// Nobody touches: refused when card_timeout ends, the helper killed.
	os.Remove(pidFile)
	a.Reconfigure(t, "approval = \"none\"\ncard_timeout = \"1s\"\n")
	if r := e.Run("ssh-keygen", "-Y", "sign", "-n", "file", "-f", k+".pub", msg); r.Code == 0 {
		t.Fatal("signed without a touch")
	}
	a.WaitLog(t, "reason=touch_timeout")
	if err := syscall.Kill(helperPID(), 0); err == nil {
		t.Fatal("the helper that waited for a touch still runs")
	}
}
