//go:build !linux

package procid

import (
	"net"
	"time"
)

// PassCredentials is a no-op where the kernel cannot attach per-message
// credentials.
func PassCredentials(*net.UnixListener) error { return nil }

// PassingCredentials reports true: there are no credentials to miss.
func PassingCredentials(*net.UnixListener) (bool, error) { return true, nil }

// SenderConn passes reads through; Sender never knows the writer here.
type SenderConn struct{ *net.UnixConn }

// NewSenderConn wraps c.
func NewSenderConn(c *net.UnixConn) *SenderConn { return &SenderConn{c} }

// Sender reports that the writer is unknown on this platform.
func (c *SenderConn) Sender() (pid int, known bool) { return 0, false }

// ResetSenders does nothing here.
func (c *SenderConn) ResetSenders() {}

// WaitAtMost bounds how long the reads that follow wait, in all: here a
// read deadline d from now.
func (c *SenderConn) WaitAtMost(d time.Duration) { c.SetReadDeadline(time.Now().Add(d)) }

// Unbound lets the reads that follow wait as long as it takes.
func (c *SenderConn) Unbound() { c.SetReadDeadline(time.Time{}) }
