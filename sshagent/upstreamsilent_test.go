package sshagent

import (
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/postern/postern/internal/syncbuf"
)

// An upstream agent that answers nothing leaves a listing without its
// keys once it waited for it as long as for any listing, and the log says
// that the upstream did not answer in that time: a listing waits for no
// device, nor for anybody to touch one.
func TestUpstreamThatAnswersNothing(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s")
	l, err := net.Listen("unix", sock) // connections are accepted by the kernel, and never read
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var logged syncbuf.Buffer
	ts := startServerWith(t, func(s *Server) { s.Upstream = &UpstreamAgent{Socket: sock} }, slog.New(slog.NewTextHandler(&logged, nil)))
	ag, _ := ts.client(t)
	if ids, err := ag.List(); err != nil || len(ids) != 0 {
		t.Fatalf("list: %v, %v", ids, err)
	}
	if log := logged.String(); !strings.Contains(log, "no answer within 10s") || strings.Contains(log, "touched") {
		t.Errorf("a listing the upstream agent did not answer is logged as:\n%s", log)
	}
}
