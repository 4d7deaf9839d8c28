package gateway

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/confine"
)

// verifyConfined checks, from the kernel, what the process pid of a run
// that its "postern run" reports confined must show, so that a card does
// not call confined a process that only made namespaces of its own: no
// new privileges (which Landlock and the seccomp filter need), no
// effective capability, and, through its root, none of the gateway's
// state directory and sockets.
//
// What the [run] settings show runs on purpose (a read_only path that
// exposes the control socket's directory, say) is not looked for.
func (g *Gateway) verifyConfined(pid int) error {
	c := g.runConfinement()
	shown := append(append(append([]string(nil), c.ReadOnly...), c.ReadWrite...), c.Sockets...)
	var dirs, files []string
	if !overlaps(g.stateDir, shown, c.Hide) {
		dirs = append(dirs, g.stateDir)
	}
	for _, f := range []string{api.ControlSocket(g.opts.Socket), g.opts.Socket} {
		if !overlaps(f, shown, c.Hide) {
			files = append(files, f)
		}
	}
	return verifyHidden(pid, dirs, files...)
}

// overlaps reports whether hidden path p may show to a run through one of
// the paths shown: one that is p or inside it, or one that holds it and
// is itself in a hidden tree (shown there on top of the hiding). A shown
// path that holds p from outside every hidden tree shows nothing of it,
// since the deeper hiding ends on top (confine's plan).
func overlaps(p string, shown, hidden []string) bool {
	for _, q := range shown {
		if confine.Under(q, p) {
			return true
		}
		if confine.Under(p, q) && slices.ContainsFunc(hidden, func(h string) bool { return confine.Under(q, h) }) {
			return true
		}
	}
	return false
}

// verifyHidden is verifyConfined for the directories whose content must
// be hidden (an empty directory stands in their place) and the files that
// must not be there at all.
func verifyHidden(pid int, dirs []string, files ...string) error {
	proc := "/proc/" + strconv.Itoa(pid)
	status, err := os.ReadFile(proc + "/status")
	if err != nil {
		return fmt.Errorf("reading the run's status: %w", err)
	}
	for _, want := range []string{"NoNewPrivs:\t1", "CapEff:\t0000000000000000"} {
		if !bytes.Contains(status, []byte("\n"+want+"\n")) {
			return fmt.Errorf("the run's process (pid %d) is not confined: its status lacks %q", pid, want)
		}
	}
	for _, d := range dirs {
		if ents, err := os.ReadDir(proc + "/root" + d); err == nil && len(ents) > 0 {
			return fmt.Errorf("the run's process (pid %d) is not confined: it sees %s", pid, filepath.Join(d, ents[0].Name()))
		}
	}
	for _, p := range files {
		if _, err := os.Lstat(proc + "/root" + p); err == nil {
			return fmt.Errorf("the run's process (pid %d) is not confined: it sees %s", pid, p)
		}
	}
	return nil
}
