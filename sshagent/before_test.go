package sshagent

import (
	"crypto/ed25519"
	"crypto/rand"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/ssh/agent"
)

// Before runs ahead of each request, and what it changes is what the
// request finds: the gateway acts there on a signal that came before the
// request.
func TestBeforeRunsAheadOfEachRequest(t *testing.T) {
	var calls atomic.Int32
	ts := startServerWith(t, func(s *Server) {
		s.Before = func() {
			if calls.Add(1) == 2 {
				s.Keys.Wipe()
			}
		}
	})
	c, _ := ts.client(t)
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	if err := c.Add(agent.AddedKey{PrivateKey: priv}); err != nil {
		t.Fatal(err)
	}
	keys, err := c.List()
	if err != nil || len(keys) != 0 || calls.Load() != 2 {
		t.Fatalf("the listing after Before wiped the keys: %d keys, %v; Before called %d times, want 2", len(keys), err, calls.Load())
	}
}
