package e2e

// FIDO keys through OpenSSH's ssh-sk-helper, with the sk-dummy.so
// provider of OpenSSH's regression suite (Debian's openssh-tests) standing
// in for a security key: added with the real ssh-add, used by the real
// ssh and ssh-keygen -Y sign, asked about on a card that says a touch
// will follow.

import (
	"os"
	"strings"
	"testing"
)

const skDummy = "/usr/lib/openssh/regress/misc/sk-dummy/sk-dummy.so"

func TestSecurityKeysThroughSKHelper(t *testing.T) {
	need(t, "ssh-add", "ssh-keygen", "ssh", "sshd")
	if _, err := os.Stat(skDummy); err != nil {
		t.Fatalf("%s is missing (apt-get install openssh-tests): %v", skDummy, err)
	}
	e := newEnv(t)
	e.Setenv("SSH_SK_PROVIDER", skDummy)
	log, allow := askpassStub(e)
	os.WriteFile(allow, nil, 0o600)
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
	sshd := startSSHDConfig(t, authorized.String(), "SecurityKeyProvider "+skDummy)
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
		if !strings.Contains(card, "Security key: once approved, it waits for a touch on the key") {
			t.Fatalf("the card does not say a touch will follow:\n%s", card)
		}
		out := e.MustRun("ssh", sshd.SSHArgs("-o", "IdentitiesOnly=yes", "-o", "IdentityFile="+k+".pub", sshd.Target(), "echo", "sk-login")...)
		if strings.TrimSpace(out.Stdout) != "sk-login" {
			t.Fatalf("login with %s: %s", k, out)
		}
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
