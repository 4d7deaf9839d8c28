package gateway

import "testing"

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
