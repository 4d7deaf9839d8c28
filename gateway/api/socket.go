package api

import "regexp"

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

var runSuffix = regexp.MustCompile(`\.run-[0-9a-f]+$`)
