package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// A tmuxServer is a tmux server of one test's own, with one session
// running a command: the person's terminal in the tests of consoles and
// terminals. Its socket is in the test's directory, so a server that does
// not exit cleanly leaves nothing in /tmp/tmux-UID.
type tmuxServer struct {
	e     *Env
	flags []string
}

// startTmux starts a server whose session runs command (through the
// shell) in a window of cols × rows, with the extra new-session
// arguments given; the test's end kills it.
func startTmux(t testing.TB, e *Env, cols, rows int, command string, extra ...string) *tmuxServer {
	t.Helper()
	need(t, "tmux")
	s := &tmuxServer{e: e, flags: []string{"-S", e.Path("tmux.sock"), "-f", "/dev/null"}}
	s.start(t, cols, rows, command, extra)
	return s
}

// startNamedTmux is startTmux at tmux's own place for a server name
// (-L, in /tmp/tmux-UID), where a person's server is: for the tests of
// what a run can reach. The socket is removed at the test's end whether
// or not the server removed it, once the server was killed through it
// (cleanups run last first: removed before, the server would outlive
// the test).
func startNamedTmux(t testing.TB, e *Env, name string, cols, rows int, command string) *tmuxServer {
	t.Helper()
	need(t, "tmux")
	s := &tmuxServer{e: e, flags: []string{"-L", name, "-f", "/dev/null"}}
	s.start(t, cols, rows, command, nil)
	if sock := strings.TrimSpace(s.run("display-message", "-p", "#{socket_path}").Stdout); sock != "" {
		t.Cleanup(func() {
			s.run("kill-server")
			os.Remove(sock)
		})
	}
	return s
}

func (s *tmuxServer) start(t testing.TB, cols, rows int, command string, extra []string) {
	t.Helper()
	args := append([]string{"new-session", "-d", "-x", fmt.Sprint(cols), "-y", fmt.Sprint(rows)}, extra...)
	if r := s.run(append(args, command)...); r.Code != 0 {
		t.Fatalf("tmux: %s", r)
	}
	t.Cleanup(func() { s.run("kill-server") })
}

// run runs a tmux command on the server.
func (s *tmuxServer) run(args ...string) Result {
	return s.e.Run("tmux", append(append([]string{}, s.flags...), args...)...)
}

// screen is what the pane shows, wrapped lines joined.
func (s *tmuxServer) screen() string { return s.run("capture-pane", "-p", "-J").Stdout }

// keys types keys into the pane (tmux send-keys).
func (s *tmuxServer) keys(keys ...string) { s.run(append([]string{"send-keys"}, keys...)...) }
