package askpass

// Whether the display an askpass dialog would open on answers.

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"
)

// dialWait bounds the connection to a display's socket.
const dialWait = time.Second

// displayUp returns nil when a display env names answers, or why none
// does (ErrUnavailable). A dialog that cannot open its display exits
// non-zero, as one the person cancels does: an askpass program asked
// there would deny each card at once, before anyone could read it (a
// gateway that outlived the desktop session it was started from). A
// display reached over the network other than through this machine's
// loopback is taken to answer; with SSH_ASKPASS_REQUIRE=force no
// display is needed.
func (e Env) displayUp() error {
	if e.get("SSH_ASKPASS_REQUIRE") == "force" {
		return nil
	}
	var why []string
	if w := e.get("WAYLAND_DISPLAY"); w != "" {
		p := w
		if !filepath.IsAbs(p) {
			p = filepath.Join(e.get("XDG_RUNTIME_DIR"), w)
		}
		err := answers("unix", p)
		if err == nil {
			return nil
		}
		why = append(why, fmt.Sprintf("$WAYLAND_DISPLAY %s: %v", w, err))
	}
	if d := e.get("DISPLAY"); d != "" {
		err := xAnswers(d)
		if err == nil {
			return nil
		}
		why = append(why, fmt.Sprintf("$DISPLAY %s: %v", d, err))
	}
	if why == nil {
		return nil // Program says there is none
	}
	return unavailable("the display does not answer (" + strings.Join(why, "; ") + ")")
}

// xAnswers connects to the X display d ([HOST]:NUMBER[.SCREEN]): on this
// machine through its UNIX socket (the file, or on Linux the abstract
// name), over TCP on the loopback for an ssh -X display (localhost:10).
// A display named by a socket's path (XQuartz's launchd socket) is
// taken to answer.
func xAnswers(d string) error {
	if strings.HasPrefix(d, "/") {
		return nil
	}
	host, num, ok := strings.Cut(d, ":")
	if !ok || strings.HasPrefix(num, ":") { // no number, or DECnet
		return nil
	}
	num, _, _ = strings.Cut(num, ".")
	switch host {
	case "", "unix":
		sock := "/tmp/.X11-unix/X" + num
		err := answers("unix", sock)
		if err != nil && answers("unix", "@"+sock) == nil {
			return nil
		}
		return err
	case "localhost", "127.0.0.1", "::1":
		var n int
		if _, err := fmt.Sscan(num, &n); err != nil {
			return nil
		}
		return answers("tcp", net.JoinHostPort(host, fmt.Sprint(6000+n)))
	}
	return nil
}

// answers reports whether something accepts a connection at addr.
func answers(network, addr string) error {
	c, err := net.DialTimeout(network, addr, dialWait)
	if err != nil {
		return err
	}
	return c.Close()
}
