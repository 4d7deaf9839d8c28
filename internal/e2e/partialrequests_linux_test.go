package e2e

import (
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"testing"
)

// Requests cut short just before their last byte, each as large as the
// agent takes, on many connections of one process: the gateway holds
// what arrived of them for up to thirty seconds each, and a client may
// do it again and again. What it holds together is bounded, so that a
// flood of connections costs the gateway neither its memory nor its
// life (postern-agent(1), Limits); an honest request still gets in
// once the flood is gone.
func TestPartialRequestsHoldBoundedMemory(t *testing.T) {
	need(t, "ssh-add", "ssh-keygen")
	const (
		conns  = 1200
		size   = 256 << 10 // sshagent.MaxMessage
		bound  = 160 << 10 // KiB the gateway may grow by
		writer = 16
	)
	e := newEnv(t)
	e.Config(`approval = "none"`)
	a := e.StartAgent()
	k := e.Keygen("k", "ed25519", 0, "")
	e.AddKey(k)
	before := rss(t, a.PID())
	req := make([]byte, 4+size-1)
	binary.BigEndian.PutUint32(req, size)
	req[4] = 17 // SSH_AGENTC_ADD_IDENTITY, cut short
	var (
		mu   sync.Mutex
		held []net.Conn
		wg   sync.WaitGroup
		next = make(chan struct{})
	)
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range writer {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				c, err := net.Dial("unix", a.Socket)
				if err != nil {
					continue
				}
				c.Write(req) // a connection the gateway closes fails here: fine
				mu.Lock()
				held = append(held, c)
				mu.Unlock()
			}
		}()
	}
	for range conns {
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
	grewAtMost(t, a.PID(), before, bound, fmt.Sprintf("holding %d agent requests of %d KiB cut short", conns, size>>10))
	mu.Lock()
	for _, c := range held {
		c.Close()
	}
	held = nil
	mu.Unlock()
	// An RSA key's add is larger than a kilobyte: it takes from the same
	// bound, which the closed connections gave back.
	rsa := e.Keygen("rsa", "rsa", 3072, "")
	for i := 0; ; i++ {
		r := e.Run("ssh-add", rsa)
		if r.Code == 0 {
			break
		}
		if i == 500 {
			t.Fatalf("ssh-add of an RSA key after the flood: %s\n%s", r, tail(a.Log(), 2000))
		}
		sleep10ms() // the gateway is still closing the flood's connections
	}
}

// grewAtMost fails the test when the resident memory of pid grew by more
// than bound KiB since it was before KiB, doing what.
func grewAtMost(t *testing.T, pid, before, bound int, what string) {
	t.Helper()
	grew := rss(t, pid) - before
	t.Logf("the gateway grew by %d KiB %s", grew, what)
	if grew > bound {
		t.Errorf("the gateway grew by %d MiB %s, more than %d MiB", grew>>10, what, bound>>10)
	}
}
