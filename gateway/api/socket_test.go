package api

import "testing"

func TestControlSocket(t *testing.T) {
	for in, want := range map[string]string{
		"/run/u/postern/agent.sock":             "/run/u/postern/agent.sock.ctl",
		"/run/u/postern/agent.sock.run-0a1b2c3": "/run/u/postern/agent.sock.ctl",
		RunSocket("/x/agent.7", "ff00"):         "/x/agent.7.ctl",
	} {
		if got := ControlSocket(in); got != want {
			t.Errorf("ControlSocket(%q) = %q, want %q", in, got, want)
		}
	}
}
