package bastion

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// testHost is the remote host of the relay tests: an SSH server of
// x/crypto on a loopback port, in the test process. What a session does is
// the test's handler; the host records what reached it, so that a test
// can say what the relay passed on.
type testHost struct {
	t      *testing.T
	l      net.Listener
	key    ssh.Signer    // the host key
	user   ssh.PublicKey // the one key it accepts
	config *ssh.ServerConfig

	mu sync.Mutex // guards all below; set them with set
	// handle runs a session's command; it owns the channel and must close
	// it (or leave that to cut). It runs in its own goroutine.
	handle func(*hostSession)
	// reject answers the command request with failure, as a host that
	// cannot run it does; the handler is not called.
	reject bool
	// onCommand runs when a command request arrives, before it is
	// answered; the default answers it.
	onCommand func(*hostSession)

	conns    []net.Conn
	sessions []*hostSession
	auths    int           // completed authentications
	ended    int           // authenticated connections that ended
	thaw     chan struct{} // while not nil, the host reads nothing
}

// hostSession is one session channel as the host saw it.
type hostSession struct {
	h    *testHost
	ch   ssh.Channel
	reqs <-chan *ssh.Request // the requests after the command

	Kind    string // exec, shell or subsystem
	Command string // the command line or the subsystem's name
	PTY     *ptyRequest
	Env     map[string]string
}

// ptyRequest is RFC 4254's pty-req payload.
type ptyRequest struct {
	Term          string
	Columns, Rows uint32
	Width, Height uint32
	Modes         string
}

// windowChange is RFC 4254's window-change payload.
type windowChange struct {
	Columns, Rows uint32
	Width, Height uint32
}

func newTestHost(t *testing.T, user ssh.PublicKey, setup func(*ssh.ServerConfig)) *testHost {
	t.Helper()
	key := newSigner(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &testHost{t: t, l: l, key: key, user: user}
	h.config = &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
			if string(k.Marshal()) != string(h.user.Marshal()) {
				return nil, errors.New("unknown key")
			}
			return nil, nil
		},
	}
	h.config.AddHostKey(key)
	if setup != nil {
		setup(h.config)
	}
	go h.serve()
	t.Cleanup(func() {
		l.Close()
		h.cut()
	})
	return h
}

func (h *testHost) port() int { return h.l.Addr().(*net.TCPAddr).Port }

// knownHostsLine is the known_hosts line that trusts the host's key.
func (h *testHost) knownHostsLine() string {
	p := strconv.Itoa(h.port())
	return "[127.0.0.1]:" + p + ",[localhost]:" + p + " " + string(ssh.MarshalAuthorizedKey(h.key.PublicKey()))
}

func (h *testHost) serve() {
	for {
		c, err := h.l.Accept()
		if err != nil {
			return
		}
		h.mu.Lock()
		h.conns = append(h.conns, c)
		h.mu.Unlock()
		go h.serveConn(&freezable{Conn: c, h: h})
	}
}

func (h *testHost) serveConn(c net.Conn) {
	_, chans, reqs, err := ssh.NewServerConn(c, h.config)
	if err != nil {
		c.Close()
		return
	}
	h.mu.Lock()
	h.auths++
	h.mu.Unlock()
	go ssh.DiscardRequests(reqs) // keepalives get a failure reply, as OpenSSH's sshd gives
	defer func() {
		h.mu.Lock()
		h.ended++
		h.mu.Unlock()
	}()
	for nc := range chans {
		if nc.ChannelType() != "session" {
			nc.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			continue
		}
		go h.serveSession(ch, creqs)
	}
}

// serveSession takes the requests that set up a session, as sshd does,
// up to the command; the handler gets the rest.
func (h *testHost) serveSession(ch ssh.Channel, reqs <-chan *ssh.Request) {
	s := &hostSession{h: h, ch: ch, reqs: reqs, Env: map[string]string{}}
	for req := range reqs {
		switch req.Type {
		case "pty-req":
			var p ptyRequest
			if err := ssh.Unmarshal(req.Payload, &p); err != nil {
				req.Reply(false, nil)
				continue
			}
			s.PTY = &p
			req.Reply(true, nil)
		case "env":
			var kv struct{ Name, Value string }
			if err := ssh.Unmarshal(req.Payload, &kv); err != nil {
				req.Reply(false, nil)
				continue
			}
			s.Env[kv.Name] = kv.Value
			req.Reply(true, nil)
		case "exec", "subsystem":
			var m struct{ S string }
			if err := ssh.Unmarshal(req.Payload, &m); err != nil {
				req.Reply(false, nil)
				continue
			}
			s.Command = m.S
			fallthrough
		case "shell":
			s.Kind = req.Type
			h.mu.Lock()
			h.sessions = append(h.sessions, s)
			handle, reject, onCommand := h.handle, h.reject, h.onCommand
			h.mu.Unlock()
			switch {
			case onCommand != nil:
				onCommand(s)
			case reject:
				req.Reply(false, nil)
				ch.Close()
			default:
				req.Reply(true, nil)
				handle(s)
			}
			return
		default:
			req.Reply(false, nil)
		}
	}
	ch.Close()
}

// set changes what the host does, for the sessions that start next.
func (h *testHost) set(f func(h *testHost)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(h)
}

// logins returns how many connections authenticated.
func (h *testHost) logins() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.auths
}

// connections returns how many connections authenticated, and how many
// of those ended.
func (h *testHost) connections() (logins, ended int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.auths, h.ended
}

// cut drops every connection to the host at the TCP level, as a network
// failure or a crashed host would.
func (h *testHost) cut() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.conns {
		c.Close()
	}
	if h.thaw != nil {
		close(h.thaw)
		h.thaw = nil
	}
}

// freeze stops the host reading from its connections, as a network that
// drops packets without a word does; cut ends it.
func (h *testHost) freeze() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.thaw == nil {
		h.thaw = make(chan struct{})
	}
}

// freezable is a host connection that freeze can stop.
type freezable struct {
	net.Conn
	h *testHost
}

func (f *freezable) Read(p []byte) (int, error) {
	f.h.mu.Lock()
	thaw := f.h.thaw
	f.h.mu.Unlock()
	if thaw != nil {
		<-thaw
	}
	return f.Conn.Read(p)
}

// seen returns the sessions whose command reached the host.
func (h *testHost) seen() []*hostSession {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*hostSession(nil), h.sessions...)
}

// exit ends the session as sshd does when the command exits: EOF, the
// exit status, close.
func (s *hostSession) exit(status uint32) {
	s.ch.CloseWrite()
	s.ch.SendRequest("exit-status", false, ssh.Marshal(struct{ S uint32 }{status}))
	s.ch.Close()
}

// echo sends stdin back until its EOF, then exits 0, as cat does.
func (s *hostSession) echo() {
	io.Copy(s.ch, s.ch)
	s.exit(0)
}

// killed ends the session as sshd does when a signal killed the command.
func (s *hostSession) killed(signal string, core bool, msg string) {
	s.ch.CloseWrite()
	s.ch.SendRequest("exit-signal", false, ssh.Marshal(exitSignal{Signal: signal, CoreDumped: core, Msg: msg}))
	s.ch.Close()
}

// newSigner makes an ed25519 key.
func newSigner(t *testing.T) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// shell runs the command as sshd would, in /bin/sh with HOME at home,
// its stdin, stdout and stderr the channel's, and ends the session with
// its status; done is closed when the command has exited.
func (s *hostSession) shell(home string, done chan<- struct{}) {
	defer close(done)
	c := exec.Command("/bin/sh", "-c", s.Command)
	// As sshd does: the environment the client sent, then what sshd sets
	// itself, which wins.
	for k, v := range s.Env {
		c.Env = append(c.Env, k+"="+v)
	}
	c.Env = append(c.Env, "HOME="+home, "PATH="+os.Getenv("PATH"), "SHELL=/bin/sh")
	c.Stdin, c.Stdout, c.Stderr = s.ch, s.ch, s.ch.Stderr()
	c.WaitDelay = time.Second // a client that never closes stdin
	if err := c.Start(); err != nil {
		s.exit(127)
		return
	}
	c.Wait()
	s.exit(uint32(c.ProcessState.ExitCode()))
}
