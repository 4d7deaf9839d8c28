package bastion

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
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

// hostKeyCheck verifies the real host's key against known_hosts files:
// an unknown or changed key is refused with a message that says what to
// do. It also returns the key algorithms known for the host, so that the
// negotiation picks a key known_hosts can verify.
func hostKeyCheck(files []string, t Target, onVerified func(ssh.PublicKey)) (ssh.HostKeyCallback, []string, error) {
	var existing []string
	for _, f := range files {
		if _, err := os.Stat(f); err == nil {
			existing = append(existing, f)
		}
	}
	if len(existing) == 0 {
		return nil, nil, fmt.Errorf("no known_hosts file to verify %s with (looked in %s)", t.Host, strings.Join(files, ", "))
	}
	kh, err := knownhosts.New(existing...)
	if err != nil {
		return nil, nil, fmt.Errorf("reading known_hosts: %w", err)
	}
	hostport := t.Addr()
	// Ask the callback about a key no host has: the error lists the keys
	// known for this host, and so their algorithms.
	var algos []string
	var ke *knownhosts.KeyError
	if err := kh(hostport, &net.TCPAddr{}, probeKey); errors.As(err, &ke) {
		for _, k := range ke.Want {
			algos = appendAlgos(algos, k.Key.Type())
		}
	}
	cb := func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		err := kh(hostname, remote, key)
		var ke *knownhosts.KeyError
		var re *knownhosts.RevokedError
		switch {
		case err == nil:
			onVerified(key)
			return nil
		case errors.As(err, &re):
			return fmt.Errorf("the host key of %s is revoked in known_hosts; refusing", t.Host)
		case errors.As(err, &ke) && len(ke.Want) == 0:
			return fmt.Errorf("the host key of %s (%s) is not in your known_hosts; connect once directly (ssh %s), check the fingerprint, and try again", t.Host, ssh.FingerprintSHA256(key), t.Host)
		case errors.As(err, &ke):
			return fmt.Errorf("WARNING: the host key of %s changed (now %s); this may be a man-in-the-middle attack; refusing. If the change is expected, fix known_hosts (ssh-keygen -R %s)", t.Host, ssh.FingerprintSHA256(key), knownhosts.Normalize(hostport))
		}
		return err
	}
	return cb, algos, nil
}

// appendAlgos adds the signature algorithms that verify with a key type.
func appendAlgos(algos []string, keyType string) []string {
	switch keyType {
	case ssh.KeyAlgoRSA:
		return append(algos, ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA)
	case ssh.CertAlgoRSAv01:
		return append(algos, ssh.CertAlgoRSASHA512v01, ssh.CertAlgoRSASHA256v01, ssh.CertAlgoRSAv01)
	}
	return append(algos, keyType)
}

// fastCiphers puts the AES-GCM ciphers first: with AES instructions they
// cost a fraction of ChaCha20-Poly1305 in Go, and the bastion decrypts and
// encrypts every byte once more. The local hop offers only them (OpenSSH's
// client would otherwise pick its own first choice).
var fastCiphers = []string{"aes128-gcm@openssh.com", "aes256-gcm@openssh.com"}

// probeKey is a key no known_hosts line holds.
var probeKey = func() ssh.PublicKey {
	k, _ := ssh.NewPublicKey(ed25519.PublicKey(make([]byte, ed25519.PublicKeySize)))
	if k == nil {
		panic("bastion: cannot build the probe key")
	}
	return k
}()

// dialUpstream connects to t, verifies its host key (reporting it to
// onVerified before authentication starts), and authenticates with
// signers (each asking the approval decision before it signs).
func dialUpstream(t Target, knownHosts []string, onVerified func(ssh.PublicKey), signers []ssh.Signer, timeout time.Duration) (*ssh.Client, ssh.PublicKey, error) {
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
		Config:            ssh.Config{Ciphers: append(fastCiphers, "chacha20-poly1305@openssh.com", "aes128-ctr", "aes192-ctr", "aes256-ctr")},
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
	conn.SetDeadline(time.Now().Add(timeout))
	c, chans, reqs, err := ssh.NewClientConn(conn, t.Addr(), cfg)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
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
