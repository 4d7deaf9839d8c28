package sshagent

import (
	"context"
	"net"
	"path/filepath"
	"testing"

	"github.com/postern/postern/approvals"
)

// A socket closed before it is served (a run that ended while the
// gateway began to serve its socket) ends Serve as a socket closed while
// served does, without an error: the gateway stops on a socket's error.
func TestServeASocketClosedAlready(t *testing.T) {
	ts := startServer(t)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(t.TempDir(), "s"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if err := ts.srv.Serve(context.Background(), l, &Endpoint{Channel: approvals.Channel{Kind: approvals.ChannelRun, Run: "R1"}}); err != nil {
		t.Fatalf("serving a socket closed already: %v", err)
	}
}
