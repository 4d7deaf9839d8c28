package gateway

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/postern/postern/internal/askpass"
	"github.com/postern/postern/internal/config"
	"github.com/postern/postern/sshagent"
)

// A known_hosts entry is shown read-only to runs to keep them from
// rewriting a file; one that names a unix socket (the session bus, which
// starts programs outside every run) must not put it within their reach,
// as a socket listed in [run] read_only would be (a change that waits for
// a card).
func TestRunConfinementKnownHostsShowNoSocket(t *testing.T) {
	dir := t.TempDir()
	bus := listening(t, filepath.Join(dir, "bus"))
	kh := filepath.Join(dir, "known_hosts")
	os.WriteFile(kh, nil, 0o600)
	g := confinementGateway(t)
	g.config.KnownHosts = []string{kh, bus}
	c := g.runConfinement()
	if slices.Contains(c.ReadOnly, bus) {
		t.Errorf("the socket %s, named as a known_hosts file, is within runs' reach: read-only %q", bus, c.ReadOnly)
	}
	if !slices.Contains(c.ReadOnly, kh) {
		t.Errorf("the known_hosts file %s is not read-only to runs: %q", kh, c.ReadOnly)
	}
}

// The askpass program and the gateway's own executable are shown
// read-only to runs too, and a run may work where either lies (a
// checkout holding bin/postern): once one is made a link to a socket
// (the session bus), the next run must not find the socket in its reach.
// Regular files only, as for known_hosts.
func TestRunConfinementProgramsShowNoSocket(t *testing.T) {
	dir := t.TempDir()
	bus := listening(t, filepath.Join(dir, "bus"))
	prog, exe := filepath.Join(dir, "askpass"), filepath.Join(dir, "postern")
	for _, p := range []string{prog, exe} {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	g := confinementGateway(t)
	g.askpass = askpass.Pin(askpass.Env{"SSH_ASKPASS=" + prog, "SSH_ASKPASS_REQUIRE=force"}, nil)
	g.exe = exe
	c := g.runConfinement()
	if !slices.Contains(c.ReadOnly, prog) || !slices.Contains(c.ReadOnly, exe) {
		t.Fatalf("the askpass program and the executable are not read-only to runs: %q", c.ReadOnly)
	}
	for _, p := range []string{prog, exe} {
		os.Remove(p)
		if err := os.Symlink(bus, p); err != nil {
			t.Fatal(err)
		}
	}
	c = g.runConfinement()
	for _, p := range []string{prog, exe} {
		if slices.Contains(c.ReadOnly, p) {
			t.Errorf("%s, a link to the socket %s, is within runs' reach: read-only %q", p, bus, c.ReadOnly)
		}
	}
}

// confinementGateway is a gateway as far as runConfinement reads one:
// the default configuration, no askpass program, no upstream agent.
func confinementGateway(t *testing.T) *Gateway {
	return &Gateway{
		opts:       Options{Socket: filepath.Join(t.TempDir(), "agent.sock")},
		stateDir:   t.TempDir(),
		configPath: filepath.Join(t.TempDir(), "config.toml"),
		config:     config.Defaults(),
		askpass:    &askpass.Pinned{},
		agent:      &sshagent.Server{},
	}
}

// listening makes a unix socket listen at path until the test ends.
func listening(t *testing.T, path string) string {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return path
}
