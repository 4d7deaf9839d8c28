package e2e

import (
	"strings"
	"testing"
)

// A run adds a key whose comment holds terminal escape sequences (a
// title, a clipboard write, a screen clear): the person's ssh-add -l
// and -L, which print comments as the agent lists them, show them
// escaped, and a comment of plain characters as it is.
func TestListedCommentsAreEscaped(t *testing.T) {
	need(t, "ssh-add", "ssh-keygen")
	e := newEnv(t)
	e.Config(`approval = "none"`)
	e.StartAgent()
	plain := e.Keygen("plain", "ed25519", 0, "")
	e.AddKey(plain)
	hostile := e.Path("keys", "hostile")
	e.MustRun("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "\x1b]52;c;cm0gLXJmIH4K\x07\x1b[2Jall clear", "-f", hostile)
	run := e.StartRunWith("coder", "--no-sandbox")
	if r := run.Do("ssh-add " + hostile); r.Code != 0 {
		t.Fatalf("the run's ssh-add: %s", r)
	}
	for _, flag := range []string{"-l", "-L"} {
		out := e.MustRun("ssh-add", flag).Stdout
		if strings.ContainsAny(out, "\x1b\x07") {
			t.Fatalf("ssh-add %s printed a comment's escape sequences to the person's terminal: %q", flag, out)
		}
		if !strings.Contains(out, `\x1b]52;c;cm0gLXJmIH4K\x07\x1b[2Jall clear`) || !strings.Contains(out, " plain") {
			t.Fatalf("ssh-add %s does not show the comments, escaped where they must be: %q", flag, out)
		}
	}
}
