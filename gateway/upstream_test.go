package gateway

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/postern/postern/internal/config"
	"github.com/postern/postern/sshagent"
)

func TestUpstreamAgent(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/1000")
	cfg := config.Defaults()
	own := filepath.Join(home, "agent.sock")
	tests := []struct {
		flag, conf, changes string
		want                string // the socket, or the error's text
		forward             bool
	}{
		{"", "", "refuse", "", false},
		{"", "~/.1password/agent.sock", "refuse", filepath.Join(home, ".1password/agent.sock"), false},
		{"", "$XDG_RUNTIME_DIR/ssh-tpm-agent.sock", "forward", "/run/user/1000/ssh-tpm-agent.sock", true},
		{"/flag.sock", "/conf.sock", "refuse", "/flag.sock", false},
		{"", "relative.sock", "refuse", "give an absolute path", false},
		{"", own, "refuse", "this agent's own socket", false},
	}
	for _, tt := range tests {
		cfg.Upstream, cfg.UpstreamChanges = tt.conf, tt.changes
		up, err := upstreamAgent(Options{Socket: own, Upstream: tt.flag}, cfg)
		switch {
		case err != nil:
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%q %q: %v, want %q", tt.flag, tt.conf, err, tt.want)
			}
		case tt.want == "":
			if up != nil {
				t.Errorf("no upstream configured, got %+v", up)
			}
		case up == nil || up.Socket != tt.want || (up.Changes == sshagent.UpstreamForward) != tt.forward:
			t.Errorf("%q %q: %+v, want %s", tt.flag, tt.conf, up, tt.want)
		}
	}
}
