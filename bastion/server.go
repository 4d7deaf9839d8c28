package bastion

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path"
	"sync"
	"time"

	gliderssh "github.com/gliderlabs/ssh"
	gossh "golang.org/x/crypto/ssh"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/bastion/journal"
	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/safesocket"
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
	// DialTimeout bounds connecting and authenticating upstream.
	DialTimeout time.Duration
	// Keepalive is the interval of upstream keepalives; three misses end
	// the connection. Default 15s.
	Keepalive time.Duration
	// Now returns the time; nil means time.Now.
	Now func() time.Time
}

// Server is the local bastion.
type Server struct {
	cfg      Config
	instance string
	ssh      *gliderssh.Server
	wg       sync.WaitGroup
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
	s := &Server{cfg: cfg, instance: cfg.Journal.Instance()}
	s.ssh = &gliderssh.Server{
		ServerConfigCallback: s.serverConfig,
		ConnCallback: func(ctx gliderssh.Context, c net.Conn) net.Conn {
			if cc, ok := c.(*clientConn); ok {
				ctx.SetValue(connInfoKey{}, cc.info)
				go clearDeadlineAfterHandshake(ctx, c)
			}
			return c
		},
		ChannelHandlers: map[string]gliderssh.ChannelHandler{
			"session": s.handleSession,
		},
		RequestHandlers: map[string]gliderssh.RequestHandler{},
	}
	return s
}

// clearDeadlineAfterHandshake lifts the handshake deadline once gliderlabs
// has an SSH connection: a client may take its time between commands,
// not during the key exchange.
func clearDeadlineAfterHandshake(ctx gliderssh.Context, c net.Conn) {
	for range 1200 {
		if ctx.Value(gliderssh.ContextKeyConn) != nil {
			c.SetDeadline(time.Time{})
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

type connInfoKey struct{}

// connInfo is what the bastion knows about one client connection.
type connInfo struct {
	id        string
	target    Target
	requester *procid.Peer // the ssh process behind postern connect
	chain     string

	mu sync.Mutex
	up *upstream
}

// clientConn carries connInfo through gliderlabs to the handlers.
type clientConn struct {
	net.Conn
	info *connInfo
}

func newID() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Serve accepts postern connect clients on l until ctx ends.
func (s *Server) Serve(ctx context.Context, l *net.UnixListener) error {
	err := safesocket.Serve(ctx, l, &s.wg, s.accept)
	s.wg.Wait()
	return err
}

// accept identifies the client, reads its destination and hands the
// connection to the SSH server.
func (s *Server) accept(c *net.UnixConn) {
	log := s.cfg.Log
	helper, err := s.cfg.Procs.PeerOf(c)
	if err != nil {
		log.Warn("bastion: cannot identify the client", "err", err)
		c.Close()
		return
	}
	defer helper.Close()
	if int(helper.UID) != os.Getuid() && helper.UID != 0 {
		log.Warn("bastion: refusing another user", "uid", helper.UID, "pid", helper.PID)
		c.Close()
		return
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	t, err := readPreamble(bufio.NewReaderSize(oneByte{c}, 16))
	if err != nil {
		fmt.Fprintf(c, "error %v\n", err)
		c.Close()
		return
	}
	// The requester is the ssh client that runs postern connect as its
	// ProxyCommand: the helper's parent, pinned now, while the helper is
	// alive to vouch for the relationship.
	requester, err := s.cfg.Procs.Pin(helper.PPID)
	if err != nil || requester.StartTicks > helper.StartTicks {
		fmt.Fprintf(c, "error cannot identify the ssh process behind the connection\n")
		c.Close()
		return
	}
	defer requester.Close()
	if err := helper.Verify(); err != nil {
		fmt.Fprintf(c, "error the connecting process changed\n")
		c.Close()
		return
	}
	info := &connInfo{id: newID(), target: t, requester: requester}
	chain := append(procid.Chain{requester.Process}, s.cfg.Procs.Ancestors(&requester.Process)...)
	info.chain = chain.String()
	if _, err := c.Write([]byte("ok\n")); err != nil {
		c.Close()
		return
	}
	c.SetDeadline(time.Now().Add(time.Minute)) // the SSH handshake
	log.Info("bastion: connection", "conn", info.id, "target", t.String(), "requester", info.chain)
	s.ssh.HandleConn(&clientConn{Conn: c, info: info})
	info.mu.Lock()
	up := info.up
	info.mu.Unlock()
	if up != nil {
		up.clientGone()
	}
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

func (s *Server) markersFor(host string) bool {
	for _, g := range s.cfg.Markers {
		if ok, _ := path.Match(g, host); ok {
			return true
		}
	}
	return false
}

// Wait waits for connections being served to end.
func (s *Server) Wait() { s.wg.Wait() }
