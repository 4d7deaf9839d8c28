package gateway

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/postern/postern/internal/config"
	"github.com/postern/postern/sshagent"
)

// upstreamAgent returns the upstream agent the gateway gates: the one
// named on the command line, else in the configuration, else none. It is
// read once, at start: a reload does not change where signatures go,
// nor where keys added with ssh-add are sent.
func upstreamAgent(opts Options, cfg config.File) (*sshagent.UpstreamAgent, error) {
	path := opts.Upstream
	if path == "" {
		path = cfg.Upstream
	}
	if path == "" {
		return nil, nil
	}
	path = expandPath(path)
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("upstream agent %q: give an absolute path", path)
	}
	if own, err := filepath.Abs(opts.Socket); err == nil && filepath.Clean(path) == own {
		return nil, fmt.Errorf("upstream agent %s: that is this agent's own socket", path)
	}
	up := &sshagent.UpstreamAgent{Socket: path}
	if cfg.UpstreamChanges == "forward" {
		up.Changes = sshagent.UpstreamForward
	}
	return up, nil
}

// expandPath expands a leading "~/" to $HOME, then $VARIABLES.
func expandPath(p string) string { return os.ExpandEnv(homePath(p)) }

// homePath turns "~/x" into a path under $HOME.
func homePath(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return p
}
