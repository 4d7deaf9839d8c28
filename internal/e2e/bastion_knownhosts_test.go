package e2e

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// restartKnowing restarts the gateway with file the one known_hosts file
// the bastion verifies hosts with.
func (b *bastionWorld) restartKnowing(file string) {
	b.agent.Stop()
	b.e.Config(fmt.Sprintf("approval = \"none\"\nknown_hosts = [%q]\n[bastion]\nenabled = true\nhosts = [\"127.0.0.1\"]\n", file))
	b.e.ForgetApproved(b.pass) // the bastion's settings are read at start
	b.agent = b.e.StartAgent()
	b.e.MustRun("postern", "unlock", "--passphrase-file", b.pass)
}

// A host whose key no known_hosts file the bastion reads holds is refused
// with what to do, and what it says works: ssh run as it says, with the
// person's ssh configuration (which sends the host through the bastion),
// reaches the host itself, shows the key and, answered yes, records it
// where the bastion reads it; through the bastion the command then runs.
// It said "connect once directly (ssh 127.0.0.1)": with the configuration
// that ssh went through the bastion again, to port 22, and was refused as
// before.
func TestBastionUnknownHostKeyAdviceWorks(t *testing.T) {
	need(t, "ssh", "sshd", "sh")
	b := newBastionWorld(t, "")
	empty := b.e.WriteFile("empty_known_hosts", "", 0o600)
	b.restartKnowing(empty)

	b.followAdvice()
}

// followAdvice runs a command through the bastion to a host whose key it
// does not know, and runs the ssh command line its refusal advises as
// the person would, with their configuration, answering yes to the
// fingerprint ssh shows (accept-new, given first, wins); the command
// through the bastion then runs.
func (b *bastionWorld) followAdvice() {
	t := b.e.t
	t.Helper()
	r := b.ssh("echo ran")
	m := regexp.MustCompile(`\((ssh [^()]*)\)`).FindStringSubmatch(r.Stderr)
	if r.Code != 255 || strings.Contains(r.Stdout, "ran") || m == nil {
		t.Fatalf("a host key no known_hosts holds: %s", r)
	}
	advice := strings.TrimPrefix(m[1], "ssh ")
	b.e.Run("sh", "-c", fmt.Sprintf("ssh -F %s -o StrictHostKeyChecking=accept-new -o BatchMode=yes %s true </dev/null", b.sshConfig, advice))
	if r := b.ssh("echo ran"); r.Code != 0 || !strings.Contains(r.Stdout, "ran") {
		t.Fatalf("after following the bastion's advice (%s), the host is still refused: %s", m[1], r)
	}
}

// With no known_hosts file at all (a new account: ssh has not made
// ~/.ssh/known_hosts yet), the refusal says what to do as well, and the
// first file the bastion is given is the one to make: it said only that
// it had no file to verify the host with.
func TestBastionNoKnownHostsFileAdviceWorks(t *testing.T) {
	need(t, "ssh", "sshd", "sh")
	b := newBastionWorld(t, "")
	b.restartKnowing(filepath.Join(t.TempDir(), "known_hosts"))
	b.followAdvice()
}

// A host whose key changed is refused with the ssh-keygen command line
// that removes the old key, from the file the bastion read it in: run as
// it says, the host is then one whose key is unknown. It said
// "ssh-keygen -R [127.0.0.1]:PORT", which edits ~/.ssh/known_hosts
// whatever file the bastion reads.
func TestBastionChangedHostKeyAdviceWorks(t *testing.T) {
	need(t, "ssh", "sshd", "ssh-keygen", "sh")
	b := newBastionWorld(t, "")
	other := startSSHD(t, "")
	bad := b.e.WriteFile("bad_known_hosts", fmt.Sprintf("[127.0.0.1]:%d %s\n", b.sshd.Port, other.HostKey), 0o600)
	b.restartKnowing(bad)

	r := b.ssh("echo ran")
	m := regexp.MustCompile(`\((ssh-keygen [^()]*)\)`).FindStringSubmatch(r.Stderr)
	if r.Code != 255 || !strings.Contains(r.Stderr, "changed") || m == nil {
		t.Fatalf("a changed host key: %s", r)
	}
	b.e.MustRun("sh", "-c", m[1])
	if r := b.ssh("echo ran"); r.Code != 255 || !strings.Contains(r.Stderr, "is not in your known_hosts") {
		t.Fatalf("after following the bastion's advice (%s), the old key is still known: %s", m[1], r)
	}
}
