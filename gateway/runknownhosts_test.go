package gateway

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/postern/postern/internal/askpass"
	"github.com/postern/postern/internal/config"
	"github.com/postern/postern/internal/confine"
	"github.com/postern/postern/sshagent"
)

// The known_hosts files are shown read-only to a confined run so that it
// cannot rewrite them, never to show it what is hidden: a known_hosts
// entry naming the socket directory, the state directory or the upstream
// agent's (a change that waits for no card) must not put the control
// socket, the vault or the upstream's socket within a run's reach, as a
// read_only path there would (read-only exposure wins over hiding at the
// same depth).
func TestRunConfinementKnownHostsRevealNothingHidden(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	upstream := filepath.Join(home, ".1password", "agent.sock")
	os.MkdirAll(filepath.Dir(upstream), 0o700)
	os.WriteFile(upstream, nil, 0o600)
	sockDir, state := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	for _, f := range []string{filepath.Join(home, ".ssh", "known_hosts"), filepath.Join(sockDir, "known_hosts"), filepath.Join(state, "vault"), filepath.Join(home, ".1password", "known_hosts")} {
		os.WriteFile(f, nil, 0o600)
	}
	cfg := config.Defaults()
	cfg.KnownHosts = []string{"~/.ssh/known_hosts", filepath.Join(sockDir, "known_hosts"), state + "/vault", "~/.1password/known_hosts"}
	cfg.Bastion.KnownHosts = []string{filepath.Join(sockDir, "known_hosts")}
	g := &Gateway{
		opts:       Options{Socket: filepath.Join(sockDir, "agent.sock")},
		stateDir:   state,
		configPath: filepath.Join(t.TempDir(), "config.toml"),
		config:     cfg,
		askpass:    &askpass.Pinned{},
		agent:      &sshagent.Server{Upstream: &sshagent.UpstreamAgent{Socket: upstream}},
	}
	c := g.runConfinement()
	for _, p := range c.ReadOnly {
		if i := slices.IndexFunc(c.Hide, func(h string) bool { return confine.Under(p, h) }); i >= 0 {
			t.Errorf("%s is shown read-only to runs, though %s is hidden from them", p, c.Hide[i])
		}
	}
	if !slices.Contains(c.ReadOnly, filepath.Join(home, ".ssh", "known_hosts")) {
		t.Errorf("~/.ssh/known_hosts is not read-only to runs: %q", c.ReadOnly)
	}
}
