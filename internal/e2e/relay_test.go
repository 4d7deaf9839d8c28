package e2e

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sync"
	"testing"
)

// The relay is the least an agent in front of another agent adds: the
// helper process "relay" (this test binary, POSTERN_E2E_HELPER=relay)
// passes each request of a client, untouched, to the agent at
// POSTERN_RELAY_UPSTREAM and its answer back, over an upstream
// connection of its own kept from a client that left — no checks, no
// decision, no record. BenchmarkUpstreamSign measures it beside the gate:
// one more process crossed, twice per signature.

// startRelay runs the relay to the agent at upstream, listening at sock.
func startRelay(b *testing.B, sock, upstream string) *exec.Cmd {
	b.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "POSTERN_E2E_HELPER=relay", "POSTERN_RELAY_LISTEN="+sock, "POSTERN_RELAY_UPSTREAM="+upstream)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitSocket(b, sock)
	return cmd
}

// relayMain is the relay process.
func relayMain() {
	l, err := net.Listen("unix", os.Getenv("POSTERN_RELAY_LISTEN"))
	if err != nil {
		os.Stderr.WriteString("relay: " + err.Error() + "\n")
		os.Exit(1)
	}
	upstream := os.Getenv("POSTERN_RELAY_UPSTREAM")
	var mu sync.Mutex
	var idle []net.Conn
	for {
		c, err := l.Accept()
		if err != nil {
			os.Exit(1)
		}
		go func() {
			defer c.Close()
			mu.Lock()
			var u net.Conn
			if n := len(idle); n > 0 {
				u, idle = idle[n-1], idle[:n-1]
			}
			mu.Unlock()
			if u == nil {
				if u, err = net.Dial("unix", upstream); err != nil {
					return
				}
			}
			if relayFrames(c, u) {
				mu.Lock()
				idle = append(idle, u)
				mu.Unlock()
				return
			}
			u.Close()
		}()
	}
}

// relayFrames passes c's requests to u and u's answers to c until c
// ends, and reports whether u is still good for another client.
func relayFrames(c, u net.Conn) bool {
	buf := make([]byte, 4+256<<10)
	pass := func(from, to net.Conn) error {
		if _, err := io.ReadFull(from, buf[:4]); err != nil {
			return err
		}
		n := binary.BigEndian.Uint32(buf)
		if int(n) > len(buf)-4 {
			return io.ErrShortBuffer
		}
		if _, err := io.ReadFull(from, buf[4:4+n]); err != nil {
			return err
		}
		_, err := to.Write(buf[:4+n])
		return err
	}
	for {
		if err := pass(c, u); err != nil {
			return err == io.EOF
		}
		if pass(u, c) != nil {
			return false
		}
	}
}

// echoMain is the floor's echo process: it answers each request of
// POSTERN_ECHO_SIZES' first size with a reply of the second, on one
// connection at a time.
func echoMain() {
	var in, out int
	fmt.Sscanf(os.Getenv("POSTERN_ECHO_SIZES"), "%d,%d", &in, &out)
	l, err := net.Listen("unix", os.Getenv("POSTERN_ECHO_LISTEN"))
	if err != nil {
		os.Stderr.WriteString("echo: " + err.Error() + "\n")
		os.Exit(1)
	}
	req, resp := make([]byte, in), make([]byte, out)
	for {
		c, err := l.Accept()
		if err != nil {
			os.Exit(1)
		}
		for {
			if _, err := io.ReadFull(c, req); err != nil {
				break
			}
			if _, err := c.Write(resp); err != nil {
				break
			}
		}
		c.Close()
	}
}
