package bastion

import (
	"context"
	"log/slog"
	"maps"
	"net"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gliderssh "github.com/gliderlabs/ssh"
	gossh "golang.org/x/crypto/ssh"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/bastion/journal"
	"github.com/postern/postern/internal/connlimit"
	"github.com/postern/postern/internal/procid"
)

// Config configures a bastion.
type Config struct {
	Identity   *Identity
	Keys       KeySource
	Decider    approvals.Decider
	Journal    *journal.Journal
	Audit      Recorder // nil: no audit log
	Procs      *procid.Table
	Log        *slog.Logger
	BootID     string
	KnownHosts []string // verify real hosts against these files
	// Markers lists globs over host names whose commands are wrapped to
	// leave start and result markers on the remote host.
	Markers []string
	// RequirePQKex refuses hosts that offer no post-quantum key exchange
	// the bastion speaks (mlkem768x25519-sha256).
	RequirePQKex bool
	// DialTimeout bounds connecting to the host, then its key exchange
	// and authentication, not counting the time a decision waits for a
	// person (card_timeout bounds that): the bound starts anew once the
	// decision is taken.
	DialTimeout time.Duration
	// Keepalive is the interval of upstream keepalives; three misses end
	// the connection. Default 15s.
	Keepalive time.Duration
	// Now returns the time; nil means time.Now.
	Now func() time.Time
	// Limits bounds each user's connections (nil: no bound). A connection
	// is idle, and may be pushed out, only until its preamble is read.
	Limits *connlimit.Limiter
	// Exhausted is called when accept fails for want of descriptors or
	// memory (safesocket.Serve).
	Exhausted func(error)
}

// Server is the local bastion.
type Server struct {
	cfg      Config
	instance string
	ssh      *gliderssh.Server
	wg       sync.WaitGroup
	sessions sessionCount // session channels being served
	running  running      // commands started that may still run (waiting.go)
	gate     journalGate  // commands whose end is still to be written (retire.go)
	changes  changes      // cfg.Journal's changes after a start (outcome.go)

	stopping   atomic.Bool
	held       atomic.Pointer[string] // why the bastion sends no more commands (Hold)
	handshakes chan struct{}          // a slot per client in its SSH handshake (maxHandshakes)
	cut        chan struct{}          // closed when Stop cuts the connections
	cutOnce    sync.Once
	mu         sync.Mutex
	active     map[*connInfo]net.Conn // client connections being served
}

// New prepares a bastion server.
func New(cfg Config) *Server {
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 30 * time.Second
	}
	if cfg.Keepalive == 0 {
		cfg.Keepalive = 15 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, instance: cfg.Journal.Instance(), active: map[*connInfo]net.Conn{}, changes: cfg.Journal, handshakes: make(chan struct{}, maxHandshakes), cut: make(chan struct{})}
	s.ssh = &gliderssh.Server{
		ServerConfigCallback: s.serverConfig,
		ConnCallback: func(ctx gliderssh.Context, c net.Conn) net.Conn {
			if cc, ok := c.(*clientConn); ok {
				ctx.SetValue(connInfoKey{}, cc.info)
				go clearDeadlineAfterHandshake(ctx, cc)
			}
			return c
		},
		ChannelHandlers: map[string]gliderssh.ChannelHandler{
			"session": s.countedSession,
		},
		RequestHandlers: map[string]gliderssh.RequestHandler{},
	}
	return s
}

// HandleConn serves one client that connected to a socket the caller
// accepts on, and returns when the client's connection ends. Wait waits
// for it too.
func (s *Server) HandleConn(c *net.UnixConn) {
	s.wg.Add(1)
	defer s.wg.Done()
	s.accept(c)
}

// serverConfig presents a host certificate for the name the client asked
// for; client authentication is the kernel's peer identification, done
// before SSH starts.
func (s *Server) serverConfig(ctx gliderssh.Context) *gossh.ServerConfig {
	cfg := &gossh.ServerConfig{NoClientAuth: true}
	cfg.Ciphers = fastCiphers
	info, _ := ctx.Value(connInfoKey{}).(*connInfo)
	if info == nil {
		return cfg
	}
	signer, err := s.cfg.Identity.hostSigner(info.target.Host, s.cfg.Now())
	if err != nil {
		s.cfg.Log.Error("bastion: cannot sign a host certificate", "err", err)
		return cfg
	}
	cfg.AddHostKey(signer)
	return cfg
}

// markersFor reports whether a glob of Config.Markers matches host, case
// aside, as ssh_config's Host patterns match.
func (s *Server) markersFor(host string) bool {
	host = strings.ToLower(host)
	for _, g := range s.cfg.Markers {
		if ok, _ := path.Match(strings.ToLower(g), host); ok {
			return true
		}
	}
	return false
}

// Wait waits for connections being served to end, and their sessions.
func (s *Server) Wait() {
	s.wg.Wait()
	<-s.sessions.idle()
}

// cutOffWait bounds how long Stop waits, after cutting the connections,
// for the commands to record that their outcome is unknown.
const cutOffWait = 5 * time.Second

// Stop ends the bastion for a gateway that stops: from now on every new
// connection and command is refused. Commands still running have until
// ctx ends to finish on their own; then their connections to the hosts
// are cut, each command whose end was not seen is recorded unknown
// (bastion_stopped) and its client told so, then the clients'
// connections are closed, before Stop returns — or, past cutOffWait, left
// running in the journal, which the next start records unknown
// (bastion_restarted). It returns how many client connections it cut.
func (s *Server) Stop(ctx context.Context) int {
	s.stopping.Store(true)
	done := make(chan struct{})
	go func() { s.Wait(); close(done) }()
	select {
	case <-done:
		return 0
	case <-ctx.Done():
	}
	s.cutOnce.Do(func() { close(s.cut) })
	s.mu.Lock()
	conns := maps.Clone(s.active)
	s.mu.Unlock()
	// The connections to the hosts first: each command cut off records
	// that its outcome is unknown and tells its client so, naming its
	// journal entry; then the connections of the clients.
	for info, c := range conns {
		info.mu.Lock()
		up := info.up
		info.mu.Unlock()
		if up != nil {
			up.client.Close()
		} else {
			c.Close()
		}
	}
	s.cfg.Log.Warn("bastion: stopping; connections cut after the grace period", "connections", len(conns))
	deadline := time.After(cutOffWait)
	select {
	case <-s.sessions.idle():
	case <-deadline:
	}
	for _, c := range conns {
		c.Close()
	}
	select {
	case <-done:
	case <-deadline:
		s.cfg.Log.Error("bastion: commands did not record their end in time; the next start records them unknown")
	}
	return len(conns)
}

// Hold makes the bastion send no command from now on, on the client
// connections it serves already too (ssh's ControlMaster keeps one for
// hours), nor probe a host for Resolve: each is refused, the client told
// why. New connections the caller refuses itself. For a gateway whose
// configuration in force no longer approves the one the bastion was
// started from (the known_hosts files it verifies hosts with), until it
// restarts.
func (s *Server) Hold(why string) { s.held.Store(&why) }

// refusal is why no command is sent now: the gateway is stopping, or the
// bastion is held; "" when commands are sent.
func (s *Server) refusal() string {
	if s.stopping.Load() {
		return "the gateway is stopping"
	}
	if why := s.held.Load(); why != nil {
		return *why
	}
	return ""
}

// track counts a client connection as being served; the returned
// function stops counting it.
func (s *Server) track(info *connInfo, c net.Conn) func() {
	s.mu.Lock()
	s.active[info] = c
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.active, info)
		s.mu.Unlock()
	}
}
