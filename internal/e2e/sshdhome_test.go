package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The tests' sshd runs nothing from the home directory that the password
// database gives the user who runs the tests (sshd reads it there, not
// from $HOME): a runner's ~/.ssh/rc would run at every login of every
// test, with the runner's files, and could change what a test sees. The
// runner's home is played by a directory of the test, named in a copy
// of /etc/passwd that sshd sees in a mount namespace of its own.
func TestSSHDRunsNothingOfTheRunnersHome(t *testing.T) {
	needRoot(t, "to show sshd another /etc/passwd, in a mount namespace of its own")
	need(t, "unshare", "ssh", "ssh-keygen")
	e := newEnv(t)
	ran := e.Path("rc-ran")
	e.WriteFile("runner/.ssh/rc", "#!/bin/sh\n: > "+ran+"\n", 0o700)
	passwd := e.WriteFile("passwd", runnerHomeIn(t, e.Path("runner")), 0o644)
	k := e.Keygen("k", "ed25519", 0, "")
	wrap := []string{"unshare", "--mount", "--propagation", "private", "sh", "-c", `mount --bind "$0" /etc/passwd && exec "$@"`, passwd}
	sshd := startSSHDVia(t, wrap, systemOpenSSH(t), pubKey(t, k)+"\n", "")
	r := e.MustRun("ssh", sshd.SSHArgs("-o", "IdentityFile="+k, sshd.Target(), "pwd")...)
	if strings.TrimSpace(r.Stdout) != e.Path("runner") {
		t.Fatalf("the login did not start in the home directory sshd was shown (%s): %s", e.Path("runner"), r)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Fatalf("sshd ran the ~/.ssh/rc of the home directory of the user who runs the tests, %s", filepath.Join(e.Path("runner"), ".ssh", "rc"))
	}
}

// runnerHomeIn returns /etc/passwd with home as the home directory of
// the user who runs the tests.
func runnerHomeIn(t *testing.T, home string) string {
	t.Helper()
	lines := strings.SplitAfter(string(mustRead(t, "/etc/passwd")), "\n")
	uid := strconv.Itoa(os.Getuid())
	for i, l := range lines {
		f := strings.Split(l, ":")
		if len(f) == 7 && f[2] == uid {
			f[5] = home
			lines[i] = strings.Join(f, ":")
			return strings.Join(lines, "")
		}
	}
	t.Fatalf("uid %s is not in /etc/passwd", uid)
	return ""
}
