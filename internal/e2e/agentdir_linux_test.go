package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The fresh directory of an agent started without -a goes when the
// agent exits, as postern-agent(1) says, also while a run it served
// lives on: no gateway listens at that run's socket again, as one at a
// path of the person's choosing does after a restart, so the run's
// socket directory goes too.
func TestPrivateDirGoesWithALiveRun(t *testing.T) {
	e := newEnv(t)
	tmp := e.Path("tmp")
	os.Mkdir(tmp, 0o700)
	e.Setenv("TMPDIR", tmp)
	// COMMAND starts a run, waits until the gateway has registered its
	// process (not only prepared it), prints the run's launcher and the
	// agent socket, and exits: the agent exits with it.
	r := e.MustRun("postern", "agent", "sh", "-c", `postern run --no-sandbox -- sleep 600 >/dev/null 2>&1 &
echo "$!"; echo "$SSH_AUTH_SOCK"
until postern sessions --json | grep -Eq '"pid": *[1-9]'; do sleep 0.05; done
ls -d "$SSH_AUTH_SOCK".run-* >/dev/null`)
	out := strings.Fields(r.Stdout)
	if len(out) != 2 {
		t.Fatalf("postern agent COMMAND printed %q", r.Stdout)
	}
	if pid, err := strconv.Atoi(out[0]); err == nil {
		if fd, err := unix.PidfdOpen(pid, 0); err == nil {
			// postern run, which the end of its gateway does not end.
			unix.PidfdSendSignal(fd, unix.SIGTERM, nil, 0)
			unix.Close(fd)
		}
	}
	dir := filepath.Dir(out[1])
	if !strings.HasPrefix(dir, tmp+"/postern-") {
		t.Fatalf("the agent's socket %s is not in a fresh directory under $TMPDIR", out[1])
	}
	if left, err := os.ReadDir(dir); err == nil {
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		t.Fatalf("the agent left its directory %s, holding %q", dir, names)
	}
}
