package e2e

// Where the agent socket goes, beside OpenSSH 10.1's choice: ssh-agent
// binds to ~/.ssh/agent/s.* by default (-T for the old place under
// $TMPDIR, -U to leave the stale sockets there alone). postern keeps a
// fresh directory under $TMPDIR without -a (the well-known socket, for
// --ensure and the systemd units, is in $XDG_RUNTIME_DIR), takes -T and
// -U so that scripts written for ssh-agent 10.1 run, binds under
// ~/.ssh/agent when -a names it, and never removes another agent's
// socket there.

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestAgentSocketPlaces(t *testing.T) {
	need(t, "ssh-agent", "ssh-add", "stat")
	e := newEnv(t)
	e.Config(`approval = "none"`)
	tmp := e.Path("tmp")
	os.Mkdir(tmp, 0o700)
	e.Setenv("TMPDIR", tmp)
	home := e.Home()
	agentDir := filepath.Join(home, ".ssh", "agent")

	// A socket OpenSSH's ssh-agent left in ~/.ssh/agent when it was
	// killed: stale, and not postern's to remove.
	os.MkdirAll(agentDir, 0o700)
	stale := filepath.Join(agentDir, "s.openssh")
	sa := e.Command("ssh-agent", "-D", "-a", stale)
	if err := sa.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sa.Process.Kill() }) // killed below; here too when the test fails first
	for deadline := time.Now().Add(30 * time.Second); ; {
		if _, err := os.Stat(stale); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("ssh-agent made no socket")
		}
		time.Sleep(10 * time.Millisecond)
	}
	sa.Process.Signal(syscall.SIGKILL)
	sa.Wait()

	// Without -a, and with -T and -U: a fresh 0700 directory under
	// $TMPDIR, nothing under ~/.ssh/agent.
	placeRE := regexp.MustCompile(`^` + regexp.QuoteMeta(tmp) + `/postern-[^/]+/agent\.\d+$`)
	for _, flags := range [][]string{nil, {"-T"}, {"-U"}, {"-TU"}} {
		args := append(append([]string{"agent"}, flags...), "sh", "-c", `ssh-add -l >/dev/null; echo "$?"; echo "$SSH_AUTH_SOCK"; stat -c %a "$SSH_AUTH_SOCK" "$(dirname "$SSH_AUTH_SOCK")"`)
		r := e.MustRun("postern", args...)
		out := strings.Fields(r.Stdout)
		if len(out) != 4 || out[0] != "1" || !placeRE.MatchString(out[1]) || out[2] != "600" || out[3] != "700" {
			t.Fatalf("postern agent %v: %q (want ssh-add's exit 1, a socket under $TMPDIR, modes 600 and 700)", flags, out)
		}
		if _, err := os.Stat(filepath.Dir(out[1])); err == nil {
			t.Errorf("postern agent %v left its directory %s", flags, filepath.Dir(out[1]))
		}
	}

	// -a under ~/.ssh/agent, with the directory missing: made 0700.
	os.Rename(agentDir, agentDir+"-keep")
	sock := filepath.Join(agentDir, "s.postern")
	r := e.MustRun("postern", "agent", "-a", sock, "sh", "-c", `ssh-add -l >/dev/null; echo "$?"; stat -c %a "$SSH_AUTH_SOCK" "$(dirname "$SSH_AUTH_SOCK")"`)
	if out := strings.Fields(r.Stdout); len(out) != 3 || out[0] != "1" || out[1] != "600" || out[2] != "700" {
		t.Fatalf("postern agent -a %s: %q", sock, out)
	}
	os.RemoveAll(agentDir)
	os.Rename(agentDir+"-keep", agentDir)

	// The stale socket of OpenSSH's agent is still there, untouched,
	// after postern ran beside it (-a in the same directory).
	e.MustRun("postern", "agent", "-U", "-a", filepath.Join(agentDir, "s.postern"), "true")
	if fi, err := os.Lstat(stale); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("postern removed ssh-agent's socket %s: %v", stale, err)
	}
}
