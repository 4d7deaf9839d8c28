package e2e

import (
	"strings"
	"testing"
)

// ssh-add gives a key without a comment of its own the path of its file
// as a comment ("/home/me/.ssh/prod_key"), as it does to keys it loads
// from a token: a rule over key comments matches such a comment across
// its slashes, so that key = "*prod*" asks about that key on every call.
func TestKeyRuleMatchesACommentThatIsAPath(t *testing.T) {
	need(t, "ssh-keygen", "ssh-add")
	e := newEnv(t)
	e.Config("approval = \"none\"\n[[rule]]\nkey = \"*prod*\"\napproval = \"per-call\"\n")
	e.StartAgent()
	e.StartConsole()
	key := e.Path("keys", "prod_key")
	e.MustRun("mkdir", "-p", e.Path("keys"))
	e.MustRun("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "", "-f", key)
	if l := e.MustRun("ssh-add", key); !strings.Contains(l.Stderr+l.Stdout, key) {
		t.Fatalf("ssh-add did not name the key by its path: %s", l)
	}
	if l := e.MustRun("ssh-add", "-l"); !strings.Contains(l.Stdout, " "+key+" ") {
		t.Fatalf("the agent does not give the key its path as a comment: %s", l)
	}
	msg := e.WriteFile("msg", "a commit\n", 0o600)
	e.mustBeAsked("a signature with the key whose comment is "+key, e.startDetached("ssh-keygen", "-Y", "sign", "-n", "git", "-f", key+".pub", msg))
}
