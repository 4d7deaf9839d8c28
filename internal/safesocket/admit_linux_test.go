package safesocket

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/procid/proctest/nofiles"
)

// A client refused because the server has no descriptor to identify it
// with is told once in the log, however many times it is tried again
// after an idle connection is shed: a flood of connections while the
// gateway is out of descriptors makes one line each, and the shortage
// itself is logged by exhausted, paced.
func TestAdmitOutOfDescriptorsLogsOnce(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.sock")
	l, err := Listen(p)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	client, err := net.Dial("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c, err := l.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var mu sync.Mutex
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(lockedWriter{&mu, &logged}, nil))
	sheds := 0
	restore := nofiles.Exhaust(t)
	_, _, err = Admit(c, procid.Host, "agent", log, nil, func(error) { sheds++ })
	restore()
	if !errors.Is(err, procid.ErrNoResources) {
		t.Fatalf("Admit out of descriptors: %v, want ErrNoResources", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := strings.Count(logged.String(), "\n"); n != 1 || sheds != admitRetries {
		t.Fatalf("a refusal for want of descriptors, tried %d times again, logged %d lines, want 1:\n%s", sheds, n, logged.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
