package sshagent

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/postern/postern/internal/procid/proctest"
	"golang.org/x/crypto/ssh"
)

// An upstream socket where another user's agent listens (one made first
// at a path in a directory others can write, such as /tmp) is not the
// user's agent: its keys are not listed, and no session-bind nor sign
// request reaches it, as ssh-agent admits no client of another user.
// OpenSSH's ssh-agent runs as user nobody, with a key of its own.
func TestUpstreamOfAnotherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("this test runs an agent as user nobody: it needs root")
	}
	nobody := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	top, err := os.MkdirTemp("", "upuser-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	dir := filepath.Join(top, "agent")
	for _, err := range []error{os.Chmod(top, 0o755), os.Mkdir(dir, 0o700), os.Chown(dir, 65534, 65534)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	keyFile := filepath.Join(dir, "id")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "nobody's key", "-f", keyFile).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	os.Chown(keyFile, 65534, 65534)
	sock := filepath.Join(dir, "agent.sock")
	agentCmd := exec.Command("ssh-agent", "-D", "-a", sock)
	agentCmd.SysProcAttr = nobody
	if err := agentCmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agentCmd.Process.Kill(); agentCmd.Wait() })
	proctest.WaitAccepting(t, sock)
	add := exec.Command("ssh-add", keyFile)
	add.Env = []string{"SSH_AUTH_SOCK=" + sock, "PATH=/usr/bin:/bin"}
	add.SysProcAttr = nobody
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("ssh-add as nobody: %v\n%s", err, out)
	}
	pubText, err := os.ReadFile(keyFile + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	pub, _, _, _, err := ssh.ParseAuthorizedKey(pubText)
	if err != nil {
		t.Fatal(err)
	}

	ts := startServerWith(t, func(s *Server) { s.Upstream = &UpstreamAgent{Socket: sock} })
	ag, _ := ts.client(t)
	l, err := ag.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(l) != 0 {
		t.Errorf("the agent of user nobody at %s was taken for the user's upstream agent: its key %q is listed", sock, l[0].Comment)
	}
	if _, err := ag.Sign(pub, []byte("data")); err == nil {
		t.Errorf("the agent of user nobody at %s signed through postern", sock)
	}
}
