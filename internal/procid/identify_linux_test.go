package procid_test

import (
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/procid/proctest"
)

// selfConn returns both ends of a connection to a socket in a temp dir:
// the peer of the accepted end is this process.
func selfConn(t testing.TB) (accepted, dialed *net.UnixConn) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	d, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := l.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); d.Close() })
	return a, d
}

// The uid of a connected peer is the one the kernel recorded at connect
// (SO_PEERCRED); /proc/PID/status is not read for it: here the fake table
// has no status file for this process at all.
func TestPeerUIDComesFromTheSocket(t *testing.T) {
	f := proctest.New(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	st, err := procid.Host.Stat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	f.Set(os.Getpid(), 1, st.StartTicks, self)
	status := filepath.Join(f.Root, strconv.Itoa(os.Getpid()), "status")
	saved, err := os.ReadFile(status)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(status)
	a, _ := selfConn(t)
	p, err := f.Table.PeerOf(a)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if want := uint32(os.Getuid()); p.UID != want || want == 1000 {
		t.Fatalf("peer uid = %d, want %d from the socket", p.UID, want)
	}
	// Pin has no socket: there the uid is read from status (1000).
	if err := os.WriteFile(status, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	q, err := f.Table.Pin(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if q.UID != 1000 {
		t.Fatalf("pinned uid = %d, want 1000 from status", q.UID)
	}
}

// BenchmarkIdentify measures the identification of a connected peer
// (procid.Table.Admit: SO_PEERCRED, SO_PEERPIDFD, /proc/PID/stat, the
// executable's identity and cached hash, the pin check) and its release;
// the executable is hashed once, before the timer starts. Configuration:
// the real /proc, this process as the peer.
func BenchmarkIdentify(b *testing.B) {
	a, _ := selfConn(b)
	log := slog.New(slog.DiscardHandler)
	if p, err := procid.Host.Admit(a, "bench", log); err != nil {
		b.Fatal(err)
	} else {
		p.Close()
	}
	for b.Loop() {
		p, err := procid.Host.Admit(a, "bench", log)
		if err != nil {
			b.Fatal(err)
		}
		p.Close()
	}
}

// BenchmarkIdentifyAgain measures the identification of a peer whose
// process holds another connection, identified before (the pin shared
// by a process's connections, checked and read again), and its release.
func BenchmarkIdentifyAgain(b *testing.B) {
	a, _ := selfConn(b)
	log := slog.New(slog.DiscardHandler)
	first, err := procid.Host.Admit(a, "bench", log)
	if err != nil {
		b.Fatal(err)
	}
	defer first.Close()
	for b.Loop() {
		p, err := procid.Host.Admit(a, "bench", log)
		if err != nil {
			b.Fatal(err)
		}
		p.Close()
	}
}

// BenchmarkVerify measures the per-request re-check of a connected peer.
func BenchmarkVerify(b *testing.B) {
	a, _ := selfConn(b)
	p, err := procid.Host.PeerOf(a)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	for b.Loop() {
		if err := p.Verify(); err != nil {
			b.Fatal(err)
		}
	}
}
