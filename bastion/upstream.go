package bastion

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// upstream is the bastion's own SSH connection to the real host.
type upstream struct {
	client  *ssh.Client
	hostKey ssh.PublicKey // verified against the user's known_hosts
	key     Key           // the key it authenticated with
	dead    chan struct{} // closed when the connection ends
	err     error         // why, when known

	mu    sync.Mutex
	users int  // session channels using it
	idle  bool // the client connection is gone: close when users reaches 0
}

// The key exchanges offered upstream, strongest first: the post-quantum
// hybrid OpenSSH 9.9 and later prefer, then the classical ones OpenSSH
// offers, without x/crypto's SHA-1 group 14 default. x/crypto has no
// sntrup761x25519-sha512, the hybrid OpenSSH 8.5 to 9.8 prefer: with such
// a host the bastion's exchange is classical where a direct ssh's would
// be post-quantum. The log says so for every connection (kex, kex_pq), and
// [bastion] require_pq_kex refuses such hosts instead.
var (
	pqKex        = []string{ssh.KeyExchangeMLKEM768X25519}
	classicalKex = []string{ssh.KeyExchangeCurve25519, ssh.KeyExchangeECDHP256, ssh.KeyExchangeECDHP384, ssh.KeyExchangeECDHP521, ssh.KeyExchangeDH16SHA512, ssh.KeyExchangeDH14SHA256}
)

// kexOffer returns the key exchanges to offer: only the post-quantum ones
// when requirePQ.
func kexOffer(requirePQ bool) []string {
	if requirePQ {
		return pqKex
	}
	return append(slices.Clone(pqKex), classicalKex...)
}

// IsPQKex reports whether a key exchange resists a quantum computer (a
// post-quantum hybrid), by its SSH name.
func IsPQKex(name string) bool {
	switch name {
	case ssh.KeyExchangeMLKEM768X25519, "sntrup761x25519-sha512", "sntrup761x25519-sha512@openssh.com":
		return true
	}
	return false
}

// fastCiphers puts the AES-GCM ciphers first: with AES instructions they
// cost a fraction of ChaCha20-Poly1305 in Go, and the bastion decrypts and
// encrypts every byte once more. The local hop offers only them (OpenSSH's
// client would otherwise pick its own first choice).
var fastCiphers = []string{"aes128-gcm@openssh.com", "aes256-gcm@openssh.com"}

// dialDeadline bounds a dial: connecting, the key exchange and the
// authentication, each step within its timeout, but not the time a
// decision waits for a person, which card_timeout bounds (and may be the
// longer): the deadline is lifted while a signature waits for its
// decision, and set anew once it is taken.
type dialDeadline struct {
	timeout time.Duration

	mu   sync.Mutex
	conn net.Conn
}

// arm sets the deadline of c, the dial's connection, timeout from now.
func (d *dialDeadline) arm(c net.Conn) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.conn = c
	c.SetDeadline(time.Now().Add(d.timeout))
}

// waiting lifts the deadline while wait runs, then sets it anew.
func (d *dialDeadline) waiting(wait func()) {
	d.mu.Lock()
	c := d.conn
	d.mu.Unlock()
	if c != nil {
		c.SetDeadline(time.Time{})
		defer d.arm(c)
	}
	wait()
}

// dialUpstream connects to t, verifies its host key (reporting it to
// onVerified before authentication starts), and authenticates with
// signers (each asking the approval decision before it signs, under
// deadline.waiting).
func dialUpstream(t Target, knownHosts []string, onVerified func(ssh.PublicKey), signers []ssh.Signer, deadline *dialDeadline, requirePQ bool) (*ssh.Client, ssh.PublicKey, error) {
	timeout := deadline.timeout
	var verified ssh.PublicKey
	cb, algos, err := hostKeyCheck(knownHosts, t, func(k ssh.PublicKey) {
		verified = k
		if onVerified != nil {
			onVerified(k)
		}
	})
	if err != nil {
		return nil, nil, err
	}
	cfg := &ssh.ClientConfig{
		Config: ssh.Config{
			KeyExchanges: kexOffer(requirePQ),
			Ciphers:      append(slices.Clone(fastCiphers), "chacha20-poly1305@openssh.com", "aes128-ctr", "aes192-ctr", "aes256-ctr"),
		},
		User:              t.User,
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(signers...)},
		HostKeyCallback:   cb,
		HostKeyAlgorithms: algos,
		Timeout:           timeout,
	}
	conn, err := net.DialTimeout("tcp", t.Addr(), timeout)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to %s: %w", t.Addr(), err)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetKeepAlive(true)
		tc.SetKeepAlivePeriod(15 * time.Second)
	}
	deadline.arm(conn)
	c, chans, reqs, err := ssh.NewClientConn(conn, t.Addr(), cfg)
	if err != nil {
		conn.Close()
		if requirePQ && strings.Contains(err.Error(), "no common algorithm for key exchange") {
			return nil, nil, fmt.Errorf("the host offers no post-quantum key exchange this bastion speaks (%s), and [bastion] require_pq_kex is set: %w", strings.Join(pqKex, ", "), err)
		}
		return nil, nil, err
	}
	deadline.mu.Lock()
	deadline.conn = nil // no decision waits any more
	deadline.mu.Unlock()
	conn.SetDeadline(time.Time{})
	return ssh.NewClient(c, chans, reqs), verified, nil
}

// cause returns why the connection ended, once it has.
func (u *upstream) cause() error {
	select {
	case <-u.dead:
		return u.err
	default:
		return nil
	}
}

// alive asks the upstream server for a reply: a dead connection fails at
// once or within the timeout.
func (u *upstream) alive(timeout time.Duration) bool {
	select {
	case <-u.dead:
		return false
	default:
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := u.client.SendRequest("keepalive@openssh.com", true, nil)
		done <- err
	}()
	select {
	case err := <-done:
		return err == nil
	case <-u.dead:
		return false
	case <-time.After(timeout):
		return false
	}
}

// keepalive closes the connection after missed keepalives, so that a
// silently dropped network ends the session channels (and their commands
// are reported unknown) instead of hanging.
func (u *upstream) keepalive(every time.Duration, misses int) {
	missed := 0
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-u.dead:
			return
		case <-t.C:
		}
		if u.alive(every) {
			missed = 0
			continue
		}
		if missed++; missed >= misses {
			u.client.Close()
			return
		}
	}
}

// acquire and release count the session channels using the connection;
// it is closed when the client connection is gone and none remain.
func (u *upstream) acquire() {
	u.mu.Lock()
	u.users++
	u.mu.Unlock()
}

func (u *upstream) release() {
	u.mu.Lock()
	u.users--
	closeNow := u.users == 0 && u.idle
	u.mu.Unlock()
	if closeNow {
		u.client.Close()
	}
}

// clientGone marks the client connection ended.
func (u *upstream) clientGone() {
	u.mu.Lock()
	u.idle = true
	closeNow := u.users == 0
	u.mu.Unlock()
	if closeNow {
		u.client.Close()
	}
}

// logKex logs the key exchange an upstream connection negotiated, and
// warns when it is not post-quantum: a direct ssh to the same host may
// have done better.
func (s *Server) logKex(t Target, c *ssh.Client) {
	m, ok := c.Conn.(ssh.AlgorithmsConnMetadata)
	if !ok {
		return
	}
	kex := m.Algorithms().KeyExchange
	if IsPQKex(kex) {
		s.cfg.Log.Info("bastion: upstream key exchange", "host", t.Addr(), "kex", kex, "kex_pq", true)
		return
	}
	s.cfg.Log.Warn("bastion: upstream key exchange is not post-quantum: the host offers none this bastion speaks (set [bastion] require_pq_kex to refuse such hosts)", "host", t.Addr(), "kex", kex, "kex_pq", false)
}
