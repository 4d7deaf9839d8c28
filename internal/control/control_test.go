package control

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/postern/postern/internal/procid"
)

func TestCall(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "agent.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: SocketFor(sock), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	var seen *procid.Peer
	s := &Server{Procs: procid.Host, Log: slog.New(slog.DiscardHandler), Handlers: map[string]Handler{
		"echo": func(_ context.Context, p *procid.Peer, args json.RawMessage) (any, error) {
			seen = p
			var v map[string]int
			json.Unmarshal(args, &v)
			return v, nil
		},
		"deny": func(context.Context, *procid.Peer, json.RawMessage) (any, error) {
			return nil, Errorf("denied", "not from inside the run")
		},
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Serve(ctx, l); close(done) }()
	defer func() { cancel(); <-done }()

	var out map[string]int
	if err := Call(SocketFor(sock), "echo", map[string]int{"a": 1}, &out, 0); err != nil || out["a"] != 1 {
		t.Fatalf("echo: %v %v", out, err)
	}
	if seen == nil || seen.PID != os.Getpid() {
		t.Fatalf("handler saw peer %+v", seen)
	}
	var ce *Error
	err = Call(SocketFor(sock), "deny", nil, nil, 0)
	if !errors.As(err, &ce) || ce.Code != "denied" || ce.Msg != "not from inside the run" {
		t.Fatalf("deny: %v", err)
	}
	err = Call(SocketFor(sock), "nope", nil, nil, 0)
	if !errors.As(err, &ce) || ce.Code != "usage" {
		t.Fatalf("unknown op: %v", err)
	}
	if err := Call(filepath.Join(dir, "missing.ctl"), "echo", nil, nil, 0); err == nil {
		t.Fatal("call to a missing socket succeeded")
	}
}

func TestSocketFor(t *testing.T) {
	for in, want := range map[string]string{
		"/run/u/postern/agent.sock":             "/run/u/postern/agent.sock.ctl",
		"/run/u/postern/agent.sock.run-0a1b2c3": "/run/u/postern/agent.sock.ctl",
		RunSocket("/x/agent.7", "ff00"):         "/x/agent.7.ctl",
	} {
		if got := SocketFor(in); got != want {
			t.Errorf("SocketFor(%q) = %q, want %q", in, got, want)
		}
	}
}
