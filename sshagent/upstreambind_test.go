package sshagent

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"

	"golang.org/x/crypto/ssh"
)

// The session bindings postern verified go to the upstream, in order:
// those before the upstream connection opened, and those after.
func TestUpstreamGetsSessionBinds(t *testing.T) {
	up := startUpstream(t)
	ts := startGated(t, up, UpstreamRefuse)
	call := rawCaller(t, ts.rawConn(t))
	host1, host2 := newHost(t), newHost(t)
	b1, b2 := host1.bind([]byte("session-one"), true), host2.bind([]byte("session-two"), false)
	if r := call(ext(b1)); r != msgSuccess {
		t.Fatalf("bind: %d", r)
	}
	if up.bindCount() != 0 {
		t.Fatal("the upstream connection opened before it was needed")
	}
	if r := call([]byte{msgRequestIdentities}); r != msgIdentitiesAnswer {
		t.Fatalf("list: %d", r)
	}
	if r := call(ext(b2)); r != msgSuccess {
		t.Fatalf("bind: %d", r)
	}
	// A bind postern refuses never reaches the upstream.
	bad := ssh.Marshal(sessionBindMsg{HostKey: host1.PublicKey().Marshal(), SessionID: []byte("s"), Signature: ssh.Marshal(&ssh.Signature{Format: "ssh-ed25519", Blob: make([]byte, 64)})})
	if r := call(ext(bad)); r != msgExtensionFailure {
		t.Fatalf("bad bind: %d", r)
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	if len(up.binds) != 2 || !bytes.Equal(up.binds[0], b1) || !bytes.Equal(up.binds[1], b2) {
		t.Fatalf("the upstream got %d binds", len(up.binds))
	}
}

// rawCaller sends one message on c and returns the type of the answer.
func rawCaller(t *testing.T, c net.Conn) func(msg []byte) byte {
	return func(msg []byte) byte {
		t.Helper()
		frame := binary.BigEndian.AppendUint32(nil, uint32(len(msg)))
		if _, err := c.Write(append(frame, msg...)); err != nil {
			t.Fatal(err)
		}
		var hdr [4]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			t.Fatal(err)
		}
		resp := make([]byte, binary.BigEndian.Uint32(hdr[:]))
		if _, err := io.ReadFull(c, resp); err != nil {
			t.Fatal(err)
		}
		return resp[0]
	}
}

// ext is a session-bind extension message.
func ext(contents []byte) []byte {
	return append([]byte{msgExtension}, ssh.Marshal(extensionMsg{Name: ExtSessionBind, Contents: contents})...)
}

// A connection linked to the upstream agent before the gateway stopped
// using it sends it no more session-binds: the host keys and session ids
// of the client's logins are no longer the upstream's to see.
func TestUpstreamStoppedGetsNoSessionBinds(t *testing.T) {
	up := startUpstream(t)
	ts := startGated(t, up, UpstreamRefuse)
	call := rawCaller(t, ts.rawConn(t))
	host1, host2 := newHost(t), newHost(t)
	if r := call(ext(host1.bind([]byte("session-one"), true))); r != msgSuccess {
		t.Fatalf("bind: %d", r)
	}
	if r := call([]byte{msgRequestIdentities}); r != msgIdentitiesAnswer {
		t.Fatalf("list: %d", r)
	}
	ts.srv.Upstream.Stop()
	if r := call(ext(host2.bind([]byte("session-two"), false))); r != msgSuccess {
		t.Fatalf("bind after the stop: %d", r)
	}
	if n := up.bindCount(); n != 1 {
		t.Fatalf("the upstream got %d session-binds, %d after the gateway stopped using it", n, n-1)
	}
}

// A gateway that stops using the upstream agent while a connection
// sends the upstream its session-binds (on a new link, before the
// connection's first request there) answers that request without the
// upstream's keys, where it went on with a link it had closed, and the
// request failed in a panic.
func TestUpstreamStoppedWhileBinding(t *testing.T) {
	up := startUpstream(t)
	ts := startGated(t, up, UpstreamRefuse)
	up.mu.Lock()
	up.onBind = ts.srv.Upstream.Stop
	up.mu.Unlock()
	call := rawCaller(t, ts.rawConn(t))
	host1, host2 := newHost(t), newHost(t)
	for _, b := range [][]byte{host1.bind([]byte("session-one"), true), host2.bind([]byte("session-two"), false)} {
		if r := call(ext(b)); r != msgSuccess {
			t.Fatalf("bind: %d", r)
		}
	}
	if r := call([]byte{msgRequestIdentities}); r != msgIdentitiesAnswer {
		t.Fatalf("a listing as the gateway stopped using the upstream agent: answer of type %d", r)
	}
	if n := up.bindCount(); n != 1 {
		t.Fatalf("the upstream got %d session-binds, %d after the gateway stopped using it", n, n-1)
	}
}
