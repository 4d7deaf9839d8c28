package dbustest

import (
	"bufio"
	"encoding/binary"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/postern/postern/internal/sessionbus"
)

// CutBus serves, for the rest of the test, a bus that lets one client
// in and answers whatever it sends first (its Hello) with a message cut
// in the padding between its header fields and its body: what a daemon
// killed mid-write, or a program of the user's serving the bus socket,
// leaves. It returns the bus address.
func CutBus(t testing.TB) string {
	t.Helper()
	ln, addr := listen(t)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		r := bufio.NewReader(c)
		r.ReadByte() // the credentials byte
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			switch {
			case strings.HasPrefix(line, "AUTH EXTERNAL"):
				c.Write([]byte("OK 0123456789abcdef0123456789abcdef\r\n"))
			case strings.HasPrefix(line, "AUTH"):
				c.Write([]byte("REJECTED EXTERNAL\r\n"))
			case strings.HasPrefix(line, "BEGIN"):
				if _, err := r.ReadByte(); err != nil { // Hello's first
					return
				}
				// The answer's header fields (one: a destination of one
				// byte) end 6 bytes short of the body's 8-byte boundary,
				// and nothing more comes.
				msg := []byte{'l', 2, 0, 1}                    // a method return, version 1
				msg = binary.LittleEndian.AppendUint32(msg, 8) // body length
				msg = binary.LittleEndian.AppendUint32(msg, 1) // serial
				msg = binary.LittleEndian.AppendUint32(msg, 10)
				msg = append(msg, 6, 1, 's', 0, 0, 0, 0, 0) // DESTINATION, "s", padded to 4
				msg = binary.LittleEndian.AppendUint32(msg[:20], 1)
				msg = append(msg, 'x', 0)
				c.Write(msg)
				return
			}
		}
	}()
	return addr
}

// SilentBus serves, for the rest of the test, a bus that takes every
// connection and never answers: a stopped daemon. It returns the bus
// address.
func SilentBus(t testing.TB) string {
	t.Helper()
	ln, addr := listen(t)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return addr
}

// listen listens, until the test ends, on a socket under the test's
// temporary directory, and returns the listener and its bus address.
func listen(t testing.TB) (net.Listener, string) {
	sock := filepath.Join(t.TempDir(), "bus")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln, sessionbus.PathAddress(sock)
}
