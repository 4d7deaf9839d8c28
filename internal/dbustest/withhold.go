package dbustest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"net/url"
	"strings"
	"testing"

	dbus "github.com/godbus/dbus/v5"
)

// Withholding serves, for the rest of the test, a bus that passes
// everything between its clients and the bus at addr, but for the calls
// a client makes of the method member (to the bus or to a service on
// it): those it keeps, so that they are never answered, as a daemon that
// stops answering in the middle of an exchange. addr is a unix:path=
// address, as Start returns. It returns the bus address.
func Withholding(t testing.TB, addr, member string) string {
	t.Helper()
	// unix:path=PATH, and maybe ,guid=...
	v, _, _ := strings.Cut(strings.TrimPrefix(addr, "unix:path="), ",")
	path, err := url.PathUnescape(v)
	if err != nil || !strings.HasPrefix(addr, "unix:path=") {
		t.Fatalf("not a unix:path= address: %q", addr)
	}
	ln, proxy := listen(t)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("unix", path)
			if err != nil {
				c.Close()
				continue
			}
			t.Cleanup(func() { c.Close(); up.Close() })
			go io.Copy(c, up)
			go withhold(up, c, member)
		}
	}()
	return proxy
}

// withhold copies from a client to the bus: its handshake as it is, then
// each message whole, but for the calls of member.
func withhold(up io.Writer, client io.Reader, member string) {
	r := bufio.NewReader(client)
	// The credentials byte, then the lines of the handshake up to BEGIN.
	b, err := r.ReadByte()
	if err != nil {
		return
	}
	up.Write([]byte{b})
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		up.Write([]byte(line))
		if strings.HasPrefix(line, "BEGIN") {
			break
		}
	}
	for {
		msg, err := readMessage(r)
		if err != nil {
			return
		}
		m, err := dbus.DecodeMessage(bytes.NewReader(msg))
		if err != nil {
			return
		}
		if v, ok := m.Headers[dbus.FieldMember]; m.Type == dbus.TypeMethodCall && ok && v.Value() == member {
			continue
		}
		if _, err := up.Write(msg); err != nil {
			return
		}
	}
}

// readMessage reads one whole message: its fixed header (byte order,
// type, flags, version, body length, serial, length of the header
// fields), the header fields padded to 8 bytes, and the body.
func readMessage(r io.Reader) ([]byte, error) {
	fixed := make([]byte, 16)
	if _, err := io.ReadFull(r, fixed); err != nil {
		return nil, err
	}
	var order binary.ByteOrder = binary.LittleEndian
	if fixed[0] == 'B' {
		order = binary.BigEndian
	}
	fields := (uint64(order.Uint32(fixed[12:])) + 7) &^ 7
	rest := make([]byte, fields+uint64(order.Uint32(fixed[4:])))
	if _, err := io.ReadFull(r, rest); err != nil {
		return nil, err
	}
	return append(fixed, rest...), nil
}
