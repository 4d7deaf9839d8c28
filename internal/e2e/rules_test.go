package e2e

// Rules on what is verified: an exe rule matches the verified executable
// of the requester or the run, never a name in the ancestry.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// mustBeAsked checks that a command shows a card, denies it, and checks
// that the command failed.
func (e *Env) mustBeAsked(what string, res <-chan Result) {
	e.t.Helper()
	c := e.WaitCard()
	e.MustRun("postern", "deny", c.ID)
	if r := <-res; r.Code == 0 {
		e.t.Fatalf("%s signed after a deny: %s", what, r)
	}
}

func TestExeRulesDoNotBorrowByName(t *testing.T) {
	need(t, "git", "ssh-keygen")
	gitPath, _ := exec.LookPath("git")
	gitPath, _ = filepath.EvalSymlinks(gitPath)
	keygen, _ := exec.LookPath("ssh-keygen")
	keygen, _ = filepath.EvalSymlinks(keygen)
	w := newApprovalWorld(t, "")
	e := w.e
	kh := fmt.Sprintf("known_hosts = [%q]\n", w.sshd.KnownHosts)

	// A rule by name is refused: any program can take a name.
	e.Config(kh + "[[rule]]\nexe = \"git\"\napproval = \"none\"\n")
	w.agent.WaitLog(t, `exe = \"git\": give the executable's absolute path`)

	e.Config(fmt.Sprintf("%s[[rule]]\nexe = %q\napproval = \"none\"\n[[rule]]\nexe = %q\napproval = \"none\"\n", kh, gitPath, keygen))
	w.agent.ApprovePolicy(t) // rules that ask less loosen: a person approves

	// A shell copied to a file named git, running ssh.
	fake := e.Path("bin", "git")
	os.MkdirAll(filepath.Dir(fake), 0o700)
	if out, err := exec.Command("cp", "/bin/bash", fake).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	e.mustBeAsked("a shell named git", e.startDetached(fake, "-c", sshCmd(w.sshd)))

	// git's core.sshCommand: the ssh git starts is not git.
	repo := filepath.Join(w.sshd.Dir, "repo.git")
	e.MustRun("git", "init", "-q", "--bare", repo)
	url := fmt.Sprintf("ssh://%s@127.0.0.1:%d%s", w.sshd.User, w.sshd.Port, repo)
	e.mustBeAsked("git's core.sshCommand", e.startDetached("git", "-c", "core.sshCommand=ssh "+strings.Join(w.sshd.SSHArgs(), " "), "ls-remote", url))

	// The honest path: the rule's own program is signed for without a card.
	msg := e.WriteFile("msg", "a commit\n", 0o600)
	key := e.WriteFile("agent-key.pub", pubKey(t, w.key)+"\n", 0o600)
	e.MustRun("ssh-keygen", "-Y", "sign", "-n", "git", "-f", key, msg)
	e.NoCard()
	w.agent.WaitLog(t, "reason=policy_none")
}
