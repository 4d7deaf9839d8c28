package sshagent

import (
	"crypto/rand"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// bigHostBind is a session-bind by a host key of the client's making,
// wrapped in a certificate that carries size bytes of key id: the host
// key signs the session id, so the bind verifies.
func bigHostBind(t testing.TB, sid []byte, size int) []byte {
	host, ca := newHost(t), newHost(t)
	cert := &ssh.Certificate{Key: host.PublicKey(), CertType: ssh.HostCert, ValidPrincipals: []string{"h"}, KeyId: strings.Repeat("x", size), ValidBefore: ssh.CertTimeInfinity}
	if err := cert.SignCert(rand.Reader, ca); err != nil {
		t.Fatal(err)
	}
	sig, _ := host.Sign(rand.Reader, sid)
	return ssh.Marshal(sessionBindMsg{HostKey: cert.Marshal(), SessionID: sid, Signature: ssh.Marshal(sig), Forwarding: true})
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// What a connection's session bindings keep is bounded, whatever host
// keys a client binds with: a connection that binds up to the limit of
// hops with host keys of its own making, as large as a request can
// carry, keeps at most maxBindBytes of them, and the request that
// carried a binding is not kept with it.
func TestSessionBindsHoldBoundedMemory(t *testing.T) {
	ts := startServer(t)
	const conns = 4
	for _, size := range []int{20 << 10, MaxMessage - 4<<10} {
		before := heapInUse()
		for i := range conns {
			c := ts.rawConn(t)
			for j := range maxBindings {
				roundTrip(t, c, extMsg(ExtSessionBind, bigHostBind(t, fmt.Appendf(nil, "sid-%d-%d", i, j), size)))
			}
		}
		grown := int64(heapInUse()) - int64(before)
		// Twice the bound (a parsed certificate copies its strings), and
		// what a connection costs besides.
		if limit := int64(conns * (2*maxBindBytes + 64<<10)); grown > limit {
			t.Fatalf("%d connections bound %d times each with host keys of %d KiB: the heap grew by %d KiB, more than %d KiB", conns, maxBindings, size>>10, grown>>10, limit>>10)
		}
	}
}
