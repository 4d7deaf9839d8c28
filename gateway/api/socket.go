package api

import (
	"errors"
	"path/filepath"
	"regexp"

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

// RunSocket returns the path of a run's own agent socket.
func RunSocket(sock, id string) string { return sock + ".run-" + id }

// AgentSocket returns the gateway's main agent socket given any of its
// agent sockets (the main one, or a run's).
func AgentSocket(sock string) string {
	return runSuffix.ReplaceAllString(sock, "")
}

// runSuffix matches a run socket's suffix: ".run-" and the run's id
// ("R" and hex digits).
var runSuffix = regexp.MustCompile(`\.run-R[0-9a-f]+$`)

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
