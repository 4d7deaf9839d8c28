package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/postern/postern/internal/notify/notifytest"
)

// The person's X display over TCP (DISPLAY=localhost:10.0 under ssh -X,
// an X server listening on TCP), which the run reaches through the
// network it keeps, refuses the run: the person's X authority file, whose
// cookie would let the run type into the person's terminal windows
// (xdotool), is hidden from it.
func TestConfinedRunCannotReachTheDisplayOverTCP(t *testing.T) {
	need(t, "Xvfb", "xauth", "xdpyinfo", "ssh-keygen")
	e := newEnv(t)
	e.Config("")
	a := e.StartAgent()
	// The home directory is visible to runs, read-only, as it is outside
	// the tests (here it is under /tmp, which runs do not see).
	e.Config(strings.Replace(runSection(), "read_only = [", fmt.Sprintf("read_only = [%q, ", e.Home()), 1))
	a.ApprovePolicy(t)
	b := make([]byte, 16)
	rand.Read(b)
	cookie := hex.EncodeToString(b)
	serverAuth := e.Path("xserver.auth")
	e.MustRun("xauth", "-f", serverAuth, "add", ":0", ".", cookie)
	display := "127.0.0.1:" + notifytest.Xvfb(t, "-listen", "tcp", "-auth", serverAuth)
	e.MustRun("xauth", "-f", e.Home(".Xauthority"), "add", display, ".", cookie)
	e.Setenv("DISPLAY", display)
	// Outside the run the person's display answers, with the cookie only.
	e.MustRun("xdpyinfo")
	if r := e.Run("env", "XAUTHORITY=/dev/null", "xdpyinfo"); r.Code == 0 {
		t.Fatalf("the display answers without the cookie: %s", r)
	}
	d := e.StartRun("coder")
	mustBeRefused(t, d, []escape{
		{"the person's display over TCP", "xdpyinfo >/dev/null"},
		{"the person's X authority file", "grep -q . ~/.Xauthority"},
	})
	// Named by XAUTHORITY, elsewhere than ~/.Xauthority, too.
	other := e.Home(".local", "xauth")
	os.MkdirAll(e.Home(".local"), 0o700)
	e.MustRun("xauth", "-f", other, "add", display, ".", cookie)
	e.Setenv("XAUTHORITY", other)
	e.MustRun("xdpyinfo")
	d = e.StartRun("coder")
	mustBeRefused(t, d, []escape{
		{"the display over TCP, with the file XAUTHORITY names", "xdpyinfo >/dev/null"},
	})
}
