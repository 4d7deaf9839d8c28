package notify

// Finding the session bus and reaching it through a socket whose daemon
// runs as this user (see the package documentation).

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/postern/postern/internal/envlist"
	"github.com/postern/postern/internal/procid"
)

// ErrNoBus reports that no session bus can be found.
var ErrNoBus = errors.New("no D-Bus session bus ($DBUS_SESSION_BUS_ADDRESS is unset and $XDG_RUNTIME_DIR/bus does not exist)")

// ErrNoSocket reports a bus address that names no UNIX socket.
var ErrNoSocket = errors.New("the session bus address names no UNIX socket (unix:path= or unix:abstract=): a bus reached otherwise cannot be told to be this user's")

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

// dial connects to the first UNIX socket the bus address addr names (a
// D-Bus address is a list, separated by ";"), whose daemon runs as this
// user.
func dial(addr string) (*net.UnixConn, error) {
	var errs []error
	for _, a := range strings.Split(addr, ";") {
		name := socketOf(a)
		if name == "" {
			continue
		}
		c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: name, Net: "unix"})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cred, err := procid.PeerCred(c)
		if err == nil && cred.UID != uint32(os.Geteuid()) {
			err = fmt.Errorf("the bus at %s is run by uid %d, not by this user (uid %d)", name, cred.UID, os.Geteuid())
		}
		if err != nil {
			c.Close()
			errs = append(errs, err)
			continue
		}
		return c, nil
	}
	if len(errs) == 0 {
		return nil, ErrNoSocket
	}
	return nil, errors.Join(errs...)
}

// socketOf returns the socket one D-Bus address of the unix transport
// names (an abstract one with "@" first), or "".
func socketOf(a string) string {
	params, ok := strings.CutPrefix(a, "unix:")
	if !ok {
		return ""
	}
	for _, kv := range strings.Split(params, ",") {
		k, v, _ := strings.Cut(kv, "=")
		v, err := url.PathUnescape(v)
		if err != nil || v == "" {
			continue
		}
		switch k {
		case "path":
			return v
		case "abstract":
			return "@" + v
		}
	}
	return ""
}
