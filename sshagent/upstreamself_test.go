package sshagent

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/postern/postern/internal/connlimit"
)

// An upstream socket that leads back to the agent itself (a symbolic
// link put there after the start, another name for its socket) lists
// nothing and opens no connection to the agent: the agent would
// otherwise ask itself, and that connection itself again, until the
// user's connections ran out, pushing out the idle ones.
func TestUpstreamThatIsTheAgentItself(t *testing.T) {
	link := filepath.Join(t.TempDir(), "upstream.sock")
	limits := &connlimit.Limiter{PerUID: 8}
	ts := startServerWith(t, func(s *Server) {
		s.Limits = limits
		s.Upstream = &UpstreamAgent{Socket: link}
	})
	if err := os.Symlink(ts.sock, link); err != nil {
		t.Fatal(err)
	}
	idle, _ := ts.client(t)
	if _, err := idle.List(); err != nil {
		t.Fatal(err)
	}
	ag, _ := ts.client(t)
	start := time.Now()
	if l, err := ag.List(); err != nil || len(l) != 0 {
		t.Fatalf("list: %v, %v", l, err)
	}
	if _, err := idle.List(); err != nil {
		t.Fatalf("an idle client was pushed out by the agent's connections to itself (the listing took %v): %v", time.Since(start), err)
	}
}
