package main

import (
	"fmt"
	"os"
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

// takeNotifySocket takes the socket a service manager waits on for the
// agent to say it is ready (NOTIFY_SOCKET, Type=notify in contrib's
// postern.service), told once the agent socket serves; the variable is
// unset, so that the programs the agent starts (askpass, the PKCS#11
// helper) do not take it for theirs.
func takeNotifySocket(f *agentFlags) {
	f.notify = os.Getenv("NOTIFY_SOCKET")
	os.Unsetenv("NOTIFY_SOCKET")
}
