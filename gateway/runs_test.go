package gateway

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/postern/postern/internal/confine"
	"github.com/postern/postern/sshagent"
)

func TestUpstreamHidden(t *testing.T) {
	for _, c := range []struct{ sock, home, want string }{
		// A directory of the upstream's own in the home directory goes
		// whole, with the agent's other sockets.
		{"/home/u/.1password/agent.sock", "/home/u", "/home/u/.1password"},
		{"/home/u/.gnupg/S.gpg-agent.ssh", "/home/u/", "/home/u/.gnupg"},
		// The home directory itself, and directories outside it, stay.
		{"/home/u/agent.sock", "/home/u", "/home/u/agent.sock"},
		{"/run/yubikey-agent.sock", "/home/u", "/run/yubikey-agent.sock"},
		{"/home/user2/.1password/agent.sock", "/home/u", "/home/user2/.1password/agent.sock"},
		{"/home/u/.1password/agent.sock", "", "/home/u/.1password/agent.sock"},
		{"/.agent/agent.sock", "/", "/.agent/agent.sock"},
	} {
		if got := upstreamHidden(c.sock, c.home); got != c.want {
			t.Errorf("upstreamHidden(%q, %q) = %q, want %q", c.sock, c.home, got, c.want)
		}
	}
}

func TestUpstreamHiddenAlone(t *testing.T) {
	for _, c := range []struct {
		sock string
		want bool
	}{
		{"/home/u/.1password/agent.sock", false},
		{"/home/u/agent.sock", true},
		{"/run/yubikey-agent.sock", true},
		{"/run/user/1000/gnupg/S.gpg-agent.ssh", false},
		{"/tmp/ssh-XXXXXX/agent.123", false},
	} {
		if got := upstreamHiddenAlone(c.sock, "/home/u", "/run/user/1000"); got != c.want {
			t.Errorf("upstreamHiddenAlone(%q) = %v, want %v", c.sock, got, c.want)
		}
	}
}

// A confined run is kept from the upstream agent's socket also where
// the configured path is a symbolic link to it: the socket's own
// directory goes, not only the link's.
func TestRunConfinementHidesUpstreamBehindLink(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	real := filepath.Join(home, ".1password", "agent.sock")
	link := filepath.Join(home, ".ssh", "agent.sock")
	for _, d := range []string{filepath.Dir(real), filepath.Dir(link)} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(real, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../.1password/agent.sock", link); err != nil {
		t.Fatal(err)
	}
	g := confinementGateway(t)
	g.agent.Upstream = &sshagent.UpstreamAgent{Socket: link}
	c := g.runConfinement()
	for _, want := range []string{filepath.Dir(real), link} {
		if !slices.ContainsFunc(c.Hide, func(h string) bool { return confine.Under(want, h) }) {
			t.Errorf("a confined run sees %s: hidden are %q", want, c.Hide)
		}
	}
}
