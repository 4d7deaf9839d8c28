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
	bus := filepath.Join(dir, "bus")
	l, err := net.Listen("unix", bus)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	kh := filepath.Join(dir, "known_hosts")
	os.WriteFile(kh, nil, 0o600)
	cfg := config.Defaults()
	cfg.KnownHosts = []string{kh, bus}
	g := &Gateway{
		opts:       Options{Socket: filepath.Join(t.TempDir(), "agent.sock")},
		stateDir:   t.TempDir(),
		configPath: filepath.Join(t.TempDir(), "config.toml"),
		config:     cfg,
		askpass:    &askpass.Pinned{},
		agent:      &sshagent.Server{},
	}
	c := g.runConfinement()
	if slices.Contains(c.ReadOnly, bus) {
		t.Errorf("the socket %s, named as a known_hosts file, is within runs' reach: read-only %q", bus, c.ReadOnly)
	}
	if !slices.Contains(c.ReadOnly, kh) {
		t.Errorf("the known_hosts file %s is not read-only to runs: %q", kh, c.ReadOnly)
	}
}
