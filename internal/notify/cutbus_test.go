package notify

import (
	"bufio"
	"encoding/binary"
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// A bus that ends a message in the padding between its header fields
// and its body (a daemon killed mid-write, or a program of the user's
// serving the socket) is a connection that failed: the service says so,
// and the process that holds it goes on. The D-Bus library's decoder
// panicked there, in a goroutine of its own, which ended the gateway.
func TestBusCutBeforeTheBodyIsAnError(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "bus")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
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
				// Whatever the client sends first (Hello) is answered
				// with a message whose header fields (one: a destination
				// of one byte) end 6 bytes short of the body's 8-byte
				// boundary, and nothing more.
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
	s := New(PathAddress(sock), nil)
	defer s.Close()
	if _, err := s.Status(); err == nil {
		t.Fatal("a bus that cut its answer short: no error")
	}
}
