package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// An agent --ensure that started the agent, and printed the lines that
// point the shell at it, succeeds when the agent then does not answer
// its status: it warns, where it exited 1 after the shell had been
// given the lines ("eval $(postern agent --ensure) && ..." stopped
// there with SSH_AUTH_SOCK set).
func TestEnsureThatStartedTheAgentSucceedsWithoutItsStatus(t *testing.T) {
	tempHome(t)
	defer func(d func(*agentFlags, io.Writer) error) { startDetached = d }(startDetached)
	startDetached = func(f *agentFlags, out io.Writer) error {
		evalLines(out, f, 4242, true)
		return nil // started, and gone at once (nothing listens)
	}
	var out, errw strings.Builder
	code := run([]string{"agent", "--ensure", "-a", filepath.Join(t.TempDir(), "agent.sock")}, &out, &errw)
	if code != 0 || !strings.Contains(out.String(), "SSH_AUTH_SOCK=") || !strings.Contains(out.String(), "did not answer its status") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errw.String())
	}
}
