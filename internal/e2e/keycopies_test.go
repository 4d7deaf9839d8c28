package e2e

import (
	"os"
	"strings"
	"testing"
)

// A rule on a key's comment is a rule on the key: the vault holds the
// key as "prod-deploy", and the same key added again with ssh-add under
// the comment its file now has (as ssh's AddKeysToAgent adds it) is the
// copy listed and used. Its signatures are asked about on every call
// all the same, and postern check says so, named by the fingerprint or
// by either comment.
func TestKeyRuleOnACommentFollowsTheKeyAddedAgainUnderAnother(t *testing.T) {
	need(t, "ssh-keygen", "ssh-add")
	e := newEnv(t)
	pass := e.WriteFile("pass", "vault pass\n", 0o600)
	key := e.Keygen("prod-deploy", "ed25519", 0, "")
	e.MustRun("postern", "vault", "init", "--passphrase-file", pass)
	e.MustRun("postern", "vault", "add", "--passphrase-file", pass, key)
	e.Config("approval = \"none\"\n[[rule]]\nkey = \"prod-*\"\napproval = \"per-call\"\n")
	e.StartAgent()
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
	e.StartConsole()

	e.MustRun("ssh-keygen", "-q", "-c", "-C", "alice@laptop", "-f", key)
	e.MustRun("ssh-add", key)
	if l := e.MustRun("ssh-add", "-l").Stdout; !strings.Contains(l, " alice@laptop ") {
		t.Fatalf("the agent does not list the copy added again: %s", l)
	}
	fp := strings.Fields(e.MustRun("ssh-keygen", "-lf", key+".pub").Stdout)[1]
	os.Remove(key)
	for _, name := range []string{fp, "prod-deploy", "alice@laptop"} {
		if out := e.MustRun("postern", "check", "--key", name).Stdout; !strings.HasPrefix(out, "per-call, because rule 1: key \"prod-*\"") {
			t.Errorf("postern check --key %s: %s", name, out)
		}
	}
	msg := e.WriteFile("msg", "a commit\n", 0o600)
	e.mustBeAsked("a signature with prod-deploy, added again as alice@laptop", e.startDetached("ssh-keygen", "-Y", "sign", "-n", "git", "-f", key+".pub", msg))
}
