package gateway

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/procid"
)

// A gateway that starts removes the socket directories of runs that no
// longer live (a run that ended while no gateway ran, one prepared and
// never started when a gateway was killed), where each stayed in the
// runtime directory for good. What is not such a directory of a
// socket alone (a file in it, a link, another name) is left as it is.
func TestStartSweepsRunSockets(t *testing.T) {
	var leftover, withFile, link, other string
	g, sock := startGatewayWith(t, func(dir string) {
		sock := filepath.Join(dir, "xdg_runtime_dir", "agent.sock")
		if err := os.MkdirAll(filepath.Dir(sock), 0o700); err != nil {
			t.Fatal(err)
		}
		leftover = api.RunSocket(sock, "R0123abcd")
		os.Mkdir(filepath.Dir(leftover), 0o700)
		l, err := net.Listen("unix", leftover)
		if err != nil {
			t.Fatal(err)
		}
		l.(*net.UnixListener).SetUnlinkOnClose(false)
		l.Close()
		withFile = api.RunSocket(sock, "R4567abcd")
		os.Mkdir(filepath.Dir(withFile), 0o700)
		os.WriteFile(withFile, []byte("not a socket"), 0o600)
		target := t.TempDir()
		link = filepath.Dir(api.RunSocket(sock, "R89abcdef"))
		os.Symlink(target, link)
		other = sock + ".run-notarun"
		os.Mkdir(other, 0o700)
	})
	if _, err := os.Lstat(filepath.Dir(leftover)); !os.IsNotExist(err) {
		t.Errorf("the socket directory of an ended run is still there (%v)", err)
	}
	for _, p := range []string{filepath.Dir(withFile), link, other} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s, not an ended run's socket directory, was removed (%v)", p, err)
		}
	}
	// A run the gateway serves keeps its socket.
	p, err := procid.Host.Inspect(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	run := g.engine.PrepareRun("live", p, func(id string) string { return api.RunSocket(sock, id) })
	// So does a run served again after a restart, under an id of its
	// own, at the socket its earlier id named.
	restored := g.engine.PrepareRun("restored", p, func(string) string { return api.RunSocket(sock, "Rfeedface") })
	for _, r := range []*approvals.Run{run, restored} {
		if err := g.serveRun(r); err != nil {
			t.Fatal(err)
		}
	}
	g.sweepRunSockets()
	for _, r := range []*approvals.Run{run, restored} {
		c, err := net.Dial("unix", r.Socket)
		if err != nil {
			t.Fatalf("the socket of live run %s (%s) is gone: %v", r.ID, r.Label, err)
		}
		c.Close()
	}
}
