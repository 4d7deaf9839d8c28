package api

import (
	"errors"
	"testing"
)

func TestControlSocket(t *testing.T) {
	for in, want := range map[string]string{
		"/run/u/postern/agent.sock":               "/run/u/postern/agent.sock.ctl",
		"/run/u/postern/agent.sock.run-R0a1b2c3d": "/run/u/postern/agent.sock.ctl",
		RunSocket("/x/agent.7", "Rff00aa11"):      "/x/agent.7.ctl",
		RunSocket("/x/agent.sock", "R0a1b2c3d"):   "/x/agent.sock.ctl",
	} {
		if got := ControlSocket(in); got != want {
			t.Errorf("ControlSocket(%q) = %q, want %q", in, got, want)
		}
	}
}

// The gateway and the command line find the bastion's socket with
// BastionSocket; without $XDG_RUNTIME_DIR it sits beside the agent
// socket, whichever of the gateway's agent sockets the caller knows.
func TestBastionSocket(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/7")
	for _, c := range []struct{ configured, agent, want string }{
		{"/etc/b.sock", "/x/agent.sock", "/etc/b.sock"},
		{"", "/x/agent.sock", "/run/user/7/postern/bastion.sock"},
	} {
		if got, err := BastionSocket(c.configured, c.agent); err != nil || got != c.want {
			t.Errorf("BastionSocket(%q, %q) = %q, %v; want %q", c.configured, c.agent, got, err, c.want)
		}
	}
	t.Setenv("XDG_RUNTIME_DIR", "")
	gw, err := BastionSocket("", "/tmp/postern-x/agent.7")
	if err != nil || gw != "/tmp/postern-x/agent.7.bastion" {
		t.Fatalf("without $XDG_RUNTIME_DIR: %q, %v", gw, err)
	}
	if cli, err := BastionSocket("", RunSocket("/tmp/postern-x/agent.7", "R0a1b2c3d")); err != nil || cli != gw {
		t.Errorf("from a run's socket: %q, %v; want %q", cli, err, gw)
	}
	if _, err := BastionSocket("", ""); !errors.Is(err, ErrNoBastionSocket) {
		t.Errorf("with nothing to go by: %v", err)
	}
}
