package bastion

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/bastion/journal"
	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/safesocket"
	"github.com/postern/postern/internal/syncbuf"
)

// world is a bastion as the gateway runs it — its own Unix socket in a
// temporary directory, a real command journal, the process table of this
// machine — in front of a testHost. The test process is the client: it
// connects as "postern connect" does and speaks SSH with x/crypto's
// client. Only the approval decision, the keyring and the audit log are
// the test's own, so that a test can decide and see what was recorded.
type world struct {
	t       *testing.T
	user    string // the user clients give; alice when empty
	name    string // the host's name, as clients give it; 127.0.0.1 when empty
	port    int    // the port clients give; the host's own when 0
	host    *testHost
	srv     *Server
	sock    string
	journal *journal.Journal
	decider *testDecider
	keys    *testKeys
	audit   *testRecorder
	logs    *syncbuf.Buffer

	mu      sync.Mutex
	clients []*ssh.Client
}

func newWorld(t *testing.T) *world { return newWorldWith(t, nil, nil) }

// newWorldWith starts a world after bastion and host, when not nil, have
// changed the configurations of the bastion and of the host.
func newWorldWith(t *testing.T, bastion func(*Config), host func(*ssh.ServerConfig)) *world {
	t.Helper()
	dir := t.TempDir()
	for _, v := range []string{"HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME"} {
		t.Setenv(v, dir)
	}
	signer := newSigner(t)
	w := &world{
		t:       t,
		decider: &testDecider{},
		keys:    &testKeys{signer: signer},
		audit:   &testRecorder{},
		logs:    &syncbuf.Buffer{},
	}
	w.host = newTestHost(t, signer.PublicKey(), host)
	known := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(known, []byte(w.host.knownHostsLine()), 0o600); err != nil {
		t.Fatal(err)
	}
	id, err := LoadIdentity(dir)
	if err != nil {
		t.Fatal(err)
	}
	bootID := journal.NewID()
	j, err := journal.Open(filepath.Join(dir, "journal.db"), bootID)
	if err != nil {
		t.Fatal(err)
	}
	w.journal = j
	cfg := Config{
		Identity: id, Keys: w.keys, Decider: w.decider, Journal: j, Audit: w.audit,
		Procs: procid.Host, Log: slog.New(slog.NewTextHandler(w.logs, nil)), BootID: bootID,
		KnownHosts: []string{known}, DialTimeout: 10 * time.Second,
	}
	if bastion != nil {
		bastion(&cfg)
	}
	w.srv = New(cfg)
	w.sock = filepath.Join(dir, "b.sock")
	l, err := safesocket.Listen(w.sock)
	if err != nil {
		t.Fatal(err)
	}
	if err := procid.PassCredentials(l); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { // as the gateway serves the bastion's socket
		var conns sync.WaitGroup
		err := safesocket.Serve(ctx, l, &conns, w.srv.HandleConn, cfg.Exhausted, RefuseShort)
		conns.Wait()
		w.srv.Wait()
		served <- err
	}()
	t.Cleanup(func() {
		w.mu.Lock()
		for _, c := range w.clients {
			c.Close()
		}
		w.mu.Unlock()
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		j.Close()
		if t.Failed() {
			t.Logf("bastion log:\n%s", w.logs.String())
		}
	})
	return w
}

// target is the host as a client names it.
func (w *world) target() Target {
	return Target{User: cmp.Or(w.user, "alice"), Host: cmp.Or(w.name, "127.0.0.1"), Port: cmp.Or(w.port, w.host.port())}
}

// dial connects to the bastion for the host, as "postern connect" and ssh
// do, trusting host certificates of the bastion's authority only.
func (w *world) dial() *ssh.Client {
	w.t.Helper()
	c, err := w.dialErr()
	if err != nil {
		w.t.Fatal(err)
	}
	return c
}

func (w *world) dialErr() (*ssh.Client, error) {
	t := w.target()
	conn, err := Connect(w.sock, t)
	if err != nil {
		return nil, err
	}
	// A relay that loses a message fails the test instead of hanging it.
	conn.SetDeadline(time.Now().Add(time.Minute))
	ca := w.srv.cfg.Identity.CA.PublicKey()
	checker := &ssh.CertChecker{IsHostAuthority: func(k ssh.PublicKey, _ string) bool {
		return bytes.Equal(k.Marshal(), ca.Marshal())
	}}
	cc, chans, reqs, err := ssh.NewClientConn(conn, t.Addr(), &ssh.ClientConfig{
		User:            t.User,
		HostKeyCallback: checker.CheckHostKey,
		Config:          ssh.Config{Ciphers: fastCiphers},
	})
	if err != nil {
		conn.Close()
		return nil, err
	}
	c := ssh.NewClient(cc, chans, reqs)
	w.mu.Lock()
	w.clients = append(w.clients, c)
	w.mu.Unlock()
	return c, nil
}

// entries returns the journal, newest first.
func (w *world) entries() []*journal.Entry {
	w.t.Helper()
	es, err := w.journal.List(journal.ListOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	return es
}

// only returns the journal's one entry.
func (w *world) only() *journal.Entry {
	w.t.Helper()
	es := w.entries()
	if len(es) != 1 {
		w.t.Fatalf("%d journal entries, want 1", len(es))
	}
	return es[0]
}

// ended waits until the entry with the command has an outcome (the relay
// journals it before it tells the client, but a client that went away
// learns nothing) and returns it.
func (w *world) ended(command string) *journal.Entry {
	w.t.Helper()
	for range 1000 {
		for _, e := range w.entries() {
			if string(e.Command) == command && (e.End != nil || e.Unknown != nil) {
				return e
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	w.t.Fatalf("the entry for %q never ended", command)
	return nil
}

// testDecider is the approval decision: it allows unless deny says
// otherwise, and keeps every request it was asked about.
type testDecider struct {
	mu      sync.Mutex
	deny    func(*approvals.Request) audit.Reason // a reason to deny, or ""
	asked   []*approvals.Request
	ctxs    []context.Context // the context each decision waited with
	refused []audit.Reason
	// hold, when set, keeps a decision waiting, as a card does, until it
	// is closed; the caller's end withdraws the card (canceled) unless
	// deaf is set, as an answer that crossed the client's going would.
	hold chan struct{}
	deaf bool
}

func (d *testDecider) Decide(ctx context.Context, r *approvals.Request) approvals.Decision {
	d.mu.Lock()
	d.asked = append(d.asked, r)
	d.ctxs = append(d.ctxs, ctx)
	hold, deaf := d.hold, d.deaf
	d.mu.Unlock()
	if hold != nil {
		var done <-chan struct{}
		if !deaf {
			done = ctx.Done()
		}
		select {
		case <-hold:
		case <-done:
			return approvals.Decision{Reason: audit.ReasonCanceled, Card: "card-1"}
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.deny != nil {
		if why := d.deny(r); why != "" {
			return approvals.Decision{Reason: why, Card: "card-1"}
		}
	}
	return approvals.Decision{Allow: true, Reason: "approved_once", Card: "card-1", Run: "run-1"}
}

func (d *testDecider) Refused(_ *approvals.Request, reason audit.Reason) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.refused = append(d.refused, reason)
}

// setDeny changes the decision for the requests that come next.
func (d *testDecider) setDeny(f func(*approvals.Request) audit.Reason) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.deny = f
}

func (d *testDecider) requests() []*approvals.Request {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]*approvals.Request(nil), d.asked...)
}

// testKeys is the keyring: one ed25519 key, or none while locked.
type testKeys struct {
	signer ssh.Signer
	mu     sync.Mutex
	locked bool
	signed int
}

func (k *testKeys) Keys() ([]Key, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.locked {
		return nil, errors.New("locked")
	}
	pub := k.signer.PublicKey()
	return []Key{{Public: pub, Info: approvals.Key{Fingerprint: ssh.FingerprintSHA256(pub), Type: pub.Type(), Comment: "test"}}}, nil
}

func (k *testKeys) Locks() uint64 { return 0 }

func (k *testKeys) SignSince(_ uint64, key ssh.PublicKey, data []byte, algo string) (*ssh.Signature, error) {
	k.mu.Lock()
	k.signed++
	k.mu.Unlock()
	if !bytes.Equal(key.Marshal(), k.signer.PublicKey().Marshal()) {
		return nil, errors.New("no such key")
	}
	return k.signer.Sign(rand.Reader, data)
}

func (k *testKeys) lock() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.locked = true
}

// signatures returns how many signatures the bastion asked for.
func (k *testKeys) signatures() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.signed
}

// testRecorder is the audit log.
type testRecorder struct {
	mu     sync.Mutex
	events []audit.Event
	slow   map[audit.EventType]time.Duration // how long recording a type takes
	fails  map[audit.EventType]error         // the error recording a type returns
	before func(audit.Event)                 // runs before an event is recorded
}

func (r *testRecorder) Record(e audit.Event) error {
	r.mu.Lock()
	d, before := r.slow[e.Type], r.before
	r.mu.Unlock()
	if before != nil {
		before(e)
	}
	time.Sleep(d)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.fails[e.Type]; err != nil {
		return err
	}
	r.events = append(r.events, e)
	return nil
}

// failOn makes recording an event of type typ fail with err, as a log
// that can no longer be written does.
func (r *testRecorder) failOn(typ audit.EventType, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fails == nil {
		r.fails = map[audit.EventType]error{}
	}
	r.fails[typ] = err
}

// slowDown makes recording an event of type typ take d, as a busy disk
// makes the audit log's durable writes take.
func (r *testRecorder) slowDown(typ audit.EventType, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.slow == nil {
		r.slow = map[audit.EventType]time.Duration{}
	}
	r.slow[typ] = d
}

// types returns the types of the events recorded, in order.
func (r *testRecorder) types() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		out = append(out, string(e.Type))
	}
	return out
}

// writeTemp writes a file in a temporary directory and returns its path.
func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// denyRetries has the person deny every identical retry the guard asks
// about, and allow the rest.
func (w *world) denyRetries() {
	w.decider.setDeny(func(r *approvals.Request) audit.Reason {
		if r.RetryOf != "" {
			return audit.ReasonDenied
		}
		return ""
	})
}
