package api

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/postern/postern/internal/xdg"
)

// The gateway's sockets. The control socket and every run's socket sit
// beside the agent socket, so that a client finds the gateway through
// $SSH_AUTH_SOCK; the bastion's socket has a place of its own.

// ControlSocket returns the control socket of the gateway serving the
// agent socket sock: sock with ".ctl" appended. A run's socket leads to
// the same gateway.
func ControlSocket(sock string) string {
	return AgentSocket(sock) + ".ctl"
}

// RunSocket returns the path of a run's own agent socket: in a directory
// of its own beside the agent socket, so that a confined run, which is
// shown only that directory, finds its socket again when a restarted
// gateway listens anew at the same path.
func RunSocket(sock, id string) string { return sock + ".run-" + id + "/" + runSocketName }

// RunSocketDir reports whether name, a name in the directory of agent
// socket sock, is that of a run's socket directory (RunSocket), and
// returns the run's id.
func RunSocketDir(sock, name string) (id string, ok bool) {
	id, ok = strings.CutPrefix(name, filepath.Base(sock)+".run-")
	return id, ok && runSuffix.MatchString(".run-"+id)
}

// runSocketName is the name of a run's socket in its directory.
const runSocketName = "sock"

// AgentSocket returns the gateway's main agent socket given any of its
// agent sockets (the main one, or a run's).
func AgentSocket(sock string) string {
	return runSuffix.ReplaceAllString(sock, "")
}

// runSuffix matches a run socket's suffix: ".run-" and the run's id
// ("R" and hex digits), and the socket's name in the run's directory.
var runSuffix = regexp.MustCompile(`\.run-R[0-9a-f]+(/` + runSocketName + `)?$`)

// WellKnownSocket returns the well-known agent socket:
// $XDG_RUNTIME_DIR/postern/agent.sock, or agent.sock in the state
// directory without $XDG_RUNTIME_DIR.
func WellKnownSocket() (string, error) { return xdg.AgentSocket() }

// Serves reports whether a postern gateway's control socket sits beside
// the agent socket sock (the main one or a run's).
func Serves(sock string) bool {
	fi, err := os.Stat(ControlSocket(sock))
	return err == nil && fi.Mode()&os.ModeSocket != 0
}

// Locate finds the agent socket of the gateway the command line talks
// to: env (the value of $SSH_AUTH_SOCK) when postern serves it, else the
// well-known socket when postern serves that (or starts to once
// connected to: socket activation), else env when nothing is
// there at all (a gateway that stopped: dialing it says so). note, when
// not empty, explains why env was passed over; a socket of another agent
// at env is an error that says so.
func Locate(env string) (sock, note string, err error) {
	if env != "" && Serves(env) {
		return env, "", nil
	}
	wk, err := WellKnownSocket()
	if err != nil {
		return "", "", err
	}
	if Serves(wk) || Activate(wk) {
		if env != "" {
			note = fmt.Sprintf("$SSH_AUTH_SOCK (%s) is not a postern socket (another agent, or a gateway that stopped); using the well-known socket %s", env, wk)
		}
		return wk, note, nil
	}
	if id, ok := runOf(env); ok {
		return "", "", &RunSocketError{Sock: env, Run: id}
	}
	if env != "" {
		if _, err := os.Stat(env); err == nil {
			return "", "", fmt.Errorf("%w: $SSH_AUTH_SOCK (%s) is another agent, not postern (no control socket beside it), and no gateway listens at the well-known socket %s", ErrNoGateway, env, wk)
		}
		// Nothing there: the dial says so.
		return env, "", nil
	}
	return "", "", NoGatewayUnset(wk)
}

// RunSocketError is the error of a command that needs the gateway's
// control socket, run where $SSH_AUTH_SOCK is a run's own socket and no
// control socket is in reach: inside a confined run, which is shown its
// socket alone.
type RunSocketError struct {
	Sock, Run string
}

func (e *RunSocketError) Error() string {
	return fmt.Sprintf("$SSH_AUTH_SOCK (%s) is the socket of run %s, which reaches the agent alone, not the gateway's control socket that this command needs", e.Sock, e.Run)
}

// runOf reports whether sock is a run's socket (RunSocket), and returns
// the run's id.
func runOf(sock string) (id string, ok bool) {
	if filepath.Base(sock) != runSocketName {
		return "", false
	}
	return RunSocketDir(AgentSocket(sock), filepath.Base(filepath.Dir(sock)))
}

// NoGatewayUnset is the error of a command that found no gateway: none
// named by $SSH_AUTH_SOCK, which is not set, and none at the well-known
// socket wk.
func NoGatewayUnset(wk string) error {
	return fmt.Errorf("%w: $SSH_AUTH_SOCK is not set and no gateway listens at the well-known socket %s", ErrNoGateway, wk)
}

// activationWait bounds how long Activate waits for a gateway a
// service manager starts.
const activationWait = 15 * time.Second

// Activate starts the gateway of a socket-activated agent socket
// (contrib/systemd/user/postern.socket): the service manager made the
// agent socket sock, and the control socket appears only once the
// gateway runs, which a first connection to the agent socket starts. It
// connects (sending nothing) when a socket is at sock without a control
// socket beside it, and reports whether the control socket took a
// connection within activationWait: it exists from the gateway's bind,
// a moment before the gateway listens on it. A socket nothing listens on
// is refused at once.
func Activate(sock string) bool {
	if fi, err := os.Lstat(sock); err != nil || fi.Mode()&os.ModeSocket == 0 {
		return false
	}
	c, err := net.DialTimeout("unix", sock, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	for deadline := time.Now().Add(activationWait); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if Serves(sock) && Listens(ControlSocket(sock)) {
			return true
		}
	}
	return false
}

// Listens reports whether the socket at path takes a connection.
func Listens(path string) bool {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// ErrNoBastionSocket is returned by BastionSocket when nothing tells
// where the bastion listens.
var ErrNoBastionSocket = errors.New("cannot locate the bastion socket: no socket is configured, $XDG_RUNTIME_DIR is not set and no agent socket is known")

// BastionSocket returns the socket of a gateway's bastion: configured
// (the [bastion] socket setting) when set, else
// $XDG_RUNTIME_DIR/postern/bastion.sock, else beside the gateway's agent
// socket agentSock (or a run's). The gateway listens there and the
// command line dials there.
func BastionSocket(configured, agentSock string) (string, error) {
	if configured != "" {
		return configured, nil
	}
	if dir, err := xdg.RuntimeDir(); err == nil {
		return filepath.Join(dir, "bastion.sock"), nil
	}
	if agentSock != "" {
		return AgentSocket(agentSock) + ".bastion", nil
	}
	return "", ErrNoBastionSocket
}
