package sessionbus

// Reaching the bus through a socket whose daemon runs as this user.

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	dbus "github.com/godbus/dbus/v5"

	"github.com/postern/postern/internal/procid"
)

// ErrNoSocket reports a bus address that names no UNIX socket.
var ErrNoSocket = errors.New("the session bus address names no UNIX socket (unix:path= or unix:abstract=): a bus reached otherwise cannot be told to be this user's")

// Connect opens a private connection to the bus at addr (see [Address]),
// through its first UNIX socket whose daemon runs as this user, and
// authenticates and greets it (Hello) within timeout. opts are passed to
// the D-Bus library (a signal handler, say). The caller closes the
// connection.
func Connect(addr string, timeout time.Duration, opts ...dbus.ConnOption) (*dbus.Conn, error) {
	c, err := dial(addr)
	if err != nil {
		return nil, fmt.Errorf("connecting to the session bus %s: %w", addr, err)
	}
	c.SetDeadline(time.Now().Add(timeout))
	conn, err := dbus.NewConn(c, opts...)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("connecting to the session bus %s: %w", addr, err)
	}
	if err := conn.Auth(nil); err != nil {
		conn.Close()
		return nil, fmt.Errorf("authenticating to the session bus %s: %w", addr, err)
	}
	if err := conn.Hello(); err != nil {
		conn.Close()
		return nil, fmt.Errorf("connecting to the session bus %s: %w", addr, err)
	}
	c.SetDeadline(time.Time{})
	return conn, nil
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
