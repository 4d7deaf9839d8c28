package main

import (
	"fmt"
	"path/filepath"

	"github.com/postern/postern/internal/safesocket"
)

// activationName is the agent socket's name among the descriptors a
// service manager passes (FileDescriptorName= in contrib's postern.socket);
// a single descriptor is taken whatever its name.
const activationName = "agent"

// takeActivated takes the agent socket a service manager passed (socket
// activation: LISTEN_FDS and LISTEN_PID naming this process), as
// ssh-agent -D and -d do since OpenSSH 10.0. ssh-agent ignores the
// passed socket when -a is given; postern takes it when -a names the
// same path (so that one service unit serves with and without its
// socket unit) and refuses to start when -a names another, rather than
// leave the manager's socket unanswered.
func takeActivated(f *agentFlags) error {
	l, err := safesocket.Inherited(activationName)
	if err != nil || l == nil {
		return err
	}
	path := l.Addr().String()
	if f.socket != "" {
		abs, _ := filepath.Abs(f.socket)
		if abs != path {
			l.Close()
			return fmt.Errorf("socket activation passed the socket %s, but -a names %s", path, f.socket)
		}
	}
	f.socket, f.listener = path, l
	return nil
}
