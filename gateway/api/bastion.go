package api

import (
	"net"

	"github.com/postern/postern/bastion"
)

// BastionTarget is the host a connection through the bastion is for.
type BastionTarget = bastion.Target

// ParseBastionTarget checks what ssh passes a ProxyCommand (%r %h %p).
func ParseBastionTarget(user, host, port string) (BastionTarget, error) {
	return bastion.ParseTarget(user, host, port)
}

// ErrNoBastion is returned by DialBastion when nothing listens at the
// socket: no gateway runs, or it does not serve the bastion.
var ErrNoBastion = bastion.ErrNoBastion

// DialBastion connects to the bastion listening at sock (BastionSocket)
// for t: once it returns, the connection speaks SSH to the bastion,
// which relays it to t.
func DialBastion(sock string, t BastionTarget) (*net.UnixConn, error) {
	return bastion.Connect(sock, t)
}
