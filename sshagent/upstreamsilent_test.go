package sshagent

import (
	"bytes"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh/agent"

	"github.com/postern/postern/internal/syncbuf"
)

// An upstream agent that answers nothing leaves a listing without its
// keys once it waited for it as long as for any listing, and the log says
// that the upstream did not answer in that time: a listing waits for no
// device, nor for anybody to touch one. The listings after it do not wait
// again (each ssh would wait 10 s): they go on without the upstream's
// keys at once, while the upstream is asked again in the background, and
// list its keys again once it answers.
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

	listed := make(chan []*agent.Key, 1)
	go func() {
		ids, _ := ag.List()
		listed <- ids
	}()
	select {
	case ids := <-listed:
		if len(ids) != 0 {
			t.Fatalf("the next listing: %v", ids)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the next listing waited again for the upstream agent that did not answer the last one")
	}

	// The upstream agent answers again: its keys are listed again.
	l.Close()
	os.Remove(sock)
	up := &upstreamStub{ExtendedAgent: agent.NewKeyring().(agent.ExtendedAgent)}
	key := up.addKey(t, "back")
	up.serve(t, sock)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		ids, err := ag.List()
		if err == nil && len(ids) == 1 && bytes.Equal(ids[0].Blob, key.Marshal()) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the upstream agent's key is not listed once it answers again: %v, %v", ids, err)
		}
	}
	if log := logged.String(); !strings.Contains(log, "answers again") {
		t.Errorf("the log does not say the upstream agent answers again:\n%s", log)
	}
}
