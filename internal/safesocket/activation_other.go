//go:build !linux

package safesocket

import "net"

// Inherited returns nil: socket activation (LISTEN_FDS) is systemd's, and
// the agent uses it on Linux only.
func Inherited(name string) (*net.UnixListener, error) { return nil, nil }
