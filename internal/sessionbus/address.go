// Package sessionbus finds the user's D-Bus session bus and connects to
// it, the way D-Bus clients find it: $DBUS_SESSION_BUS_ADDRESS, else
// $XDG_RUNTIME_DIR/bus. It never launches a bus.
//
//	addr, err := sessionbus.Address(os.Environ()) // ErrNoBus if none
//	conn, err := sessionbus.Connect(addr, sessionbus.CallTimeout)
//	defer conn.Close()
//	ctx, cancel := sessionbus.CallContext() // each call's deadline
//
// A bus is used only through a UNIX socket whose daemon runs as this
// user. The bus daemon is what names the process behind each sender, and
// what every message passes through: one of another user (that took the
// address of the user's bus after it went: an abstract name, or a path in
// /tmp) could name any process and read every secret sent on it. An
// address of another transport (tcp:, unixexec:, unix:tmpdir=) names no
// daemon that can be identified, and is refused with ErrNoSocket.
//
// The connection is made with github.com/godbus/dbus/v5, private to its
// caller, and its handshake has a deadline, as each call its caller makes
// should (CallTimeout): a bus that takes the connection and never answers
// (a stopped daemon) is an error, not a hang.
package sessionbus

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/postern/postern/internal/envlist"
)

// ErrNoBus reports that no session bus can be found.
var ErrNoBus = errors.New("no D-Bus session bus ($DBUS_SESSION_BUS_ADDRESS is unset and $XDG_RUNTIME_DIR/bus does not exist)")

// Address returns the session bus address in env (KEY=VALUE pairs, the
// last one winning): $DBUS_SESSION_BUS_ADDRESS, else the socket
// $XDG_RUNTIME_DIR/bus when it exists.
func Address(env []string) (string, error) {
	get := func(k string) string { return envlist.Get(env, k) }
	if a := get("DBUS_SESSION_BUS_ADDRESS"); a != "" && a != "autolaunch:" {
		return a, nil
	}
	if dir := get("XDG_RUNTIME_DIR"); dir != "" {
		p := filepath.Join(dir, "bus")
		if fi, err := os.Stat(p); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return PathAddress(p), nil
		}
	}
	return "", ErrNoBus
}

// PathAddress is the D-Bus address of the UNIX socket at path p, its
// bytes escaped as the D-Bus specification asks: a directory's name
// can hold ",", ";" or "%", which the address would read as its own.
func PathAddress(p string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.WriteString("unix:path=")
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte("-_/.*", c) >= 0:
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}
