package sshagent

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/audit"
)

// PKCS#11 tokens (ssh-add -s and -e) are used as OpenSSH's agent uses
// them: the provider library is loaded only in OpenSSH's
// ssh-pkcs11-helper, one process per provider, which the gateway speaks
// to over a socketpair; only a provider on the allow-list (-P) is loaded,
// and never for a connection that came through ssh (CVE-2023-38408).
//
// The helper's protocol is the agent protocol: ADD_SMARTCARD_KEY (the
// provider's path and the PIN) answered by IDENTITIES_ANSWER, and
// SIGN_REQUEST with the digest to sign (an RSA DigestInfo, or the hash
// for ECDSA) answered by the raw signature, as the ssh-pkcs11-helper of
// OpenSSH 9 and 10.0 speaks it.

// pkcs11Timeout bounds the exchange that loads a provider and logs in
// to its token (a token may be slow, but not asleep). A signature waits
// for the token as long as for a security key's touch (some tokens ask
// for one): touchTimeout.
const pkcs11Timeout = 30 * time.Second

// pkcs11Set is the helpers running, by the provider's resolved path.
type pkcs11Set struct {
	mu      sync.Mutex
	helpers map[string]*pkcs11Helper
}

type pkcs11Helper struct {
	provider     string
	touchTimeout func() time.Duration
	mu           sync.Mutex // one exchange at a time
	proc         *helperProc
	// keys counts the identities that sign through the helper: as with
	// OpenSSH's agent, the helper, logged in to the token, ends with the
	// last of them (ssh-add -d or -D, SIGUSR1, the end of a lifetime).
	keys atomic.Int64
}

// hold counts id among those that sign through h.
func (h *pkcs11Helper) hold(id *Identity) {
	h.keys.Add(1)
	id.release = func() {
		if h.keys.Add(-1) == 0 {
			// Not in the caller, which holds the keyring's lock: a
			// signature under way keeps the helper until it is over.
			go h.stop()
		}
	}
}

// exchange sends one message and reads the reply, waiting at most for
// wait. A helper that has not answered by then is stopped, and its
// provider's keys sign no more until it is added again.
func (h *pkcs11Helper) exchange(msg []byte, wait time.Duration) ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.proc == nil {
		return nil, errors.New("the provider was removed")
	}
	if err := h.proc.send(msg); err != nil {
		return nil, fmt.Errorf("ssh-pkcs11-helper: %w", err)
	}
	resp, err := h.proc.recv(time.Now().Add(wait))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// The reply may still come: the exchanges that follow would
		// read it as theirs.
		h.proc.cmd.Process.Kill()
		h.proc.stop()
		h.proc = nil
		err = errTouchTimeout
	}
	if err != nil {
		return nil, fmt.Errorf("ssh-pkcs11-helper: %w", err)
	}
	return resp, nil
}

func (h *pkcs11Helper) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.proc != nil {
		h.proc.stop()
		h.proc = nil
	}
}

// addSmartcard loads a PKCS#11 provider in a new ssh-pkcs11-helper and
// adds the token's keys.
func (c *conn) addSmartcard(p []byte, constrained bool) error {
	var m smartcardMsg
	if err := ssh.Unmarshal(p, &m); err != nil {
		return c.refuse("refusing a malformed PKCS#11 request")
	}
	pin := m.PIN
	defer clear(pin)
	cons := &keyConstraints{}
	var err error
	switch {
	case constrained:
		cons, err = parseConstraints(m.Constraints)
	case len(m.Constraints) != 0:
		err = errTrailing
	}
	if err == nil && cons.skProvider != "" {
		err = errNotHere(ExtSKProvider)
	}
	if err != nil {
		return c.refuse("refusing to add PKCS#11 keys: " + err.Error())
	}
	if c.remote() {
		return c.refuse("refusing to load a PKCS#11 provider for a forwarded connection", "provider", m.Provider)
	}
	// The token's login may take a while: a wipe (SIGUSR1) meanwhile
	// leaves its keys out.
	wipes := c.srv.Keys.Wipes()
	real, err := providerAllowed(m.Provider, c.srv.Providers)
	if err != nil {
		return c.refuse("refusing to load a PKCS#11 provider: " + err.Error())
	}
	set := &c.srv.pkcs11
	set.mu.Lock()
	defer set.mu.Unlock()
	if old := set.helpers[real]; old != nil {
		// As OpenSSH 10: the provider adds its keys again once none of
		// them is held (ssh-add -D, a lifetime that ran out), here by a
		// helper started with the PIN just given; while they are held,
		// loading it again adds nothing and is refused.
		if c.srv.Keys.HoldsProvider(real) {
			return c.refuse("refusing to load a PKCS#11 provider whose keys are loaded already", "provider", real)
		}
		delete(set.helpers, real)
		old.stop()
	}
	proc, err := startHelper(helperPath("SSH_PKCS11_HELPER", defaultPKCS11Helper))
	if err != nil {
		return c.refuse("refusing to add PKCS#11 keys: " + err.Error())
	}
	h := &pkcs11Helper{provider: real, proc: proc, touchTimeout: c.srv.touchTimeout}
	req := append([]byte{msgAddSmartcardKey}, ssh.Marshal(struct {
		Provider string
		PIN      []byte
	}{real, pin})...)
	resp, err := h.exchange(req, pkcs11Timeout)
	clear(req)
	if err == nil && (len(resp) == 0 || resp[0] != msgIdentitiesAnswer) {
		err = errors.New("the provider offered no keys (wrong PIN, or an empty token)")
	}
	var ids []*Identity
	if err == nil {
		ids, err = h.identities(resp[1:], cons)
	}
	if err != nil {
		h.stop()
		return c.refuse("refusing to add PKCS#11 keys: "+err.Error(), "provider", real)
	}
	for _, id := range ids {
		id.Run = c.run()
		record := func() error { return c.recordKey(KeyEvent(audit.EventAgentKeyAdded, id, "")) }
		if err := c.srv.Keys.AddSince(wipes, id, record); err != nil {
			gone, _ := c.srv.Keys.RemoveProvider(real, "")
			c.recordRemoved(gone)
			h.stop()
			return c.refuse("refusing to add PKCS#11 keys: "+err.Error(), "provider", real)
		}
	}
	if set.helpers == nil {
		set.helpers = map[string]*pkcs11Helper{}
	}
	set.helpers[real] = h
	c.log.Info("PKCS#11 keys added", "provider", real, "keys", len(ids), "confirm", cons.confirm, "lifetime", cons.lifetime)
	return nil
}

// identities turns the helper's IDENTITIES_ANSWER into identities that
// sign through it. Associated certificates (ssh-add -s with a
// certificate) become identities beside their key; with cert-only, the
// plain key is not offered.
func (h *pkcs11Helper) identities(b []byte, cons *keyConstraints) ([]*Identity, error) {
	var m struct {
		N    uint32
		Rest []byte `ssh:"rest"`
	}
	if err := ssh.Unmarshal(b, &m); err != nil || m.N == 0 || m.N > 1024 {
		return nil, errors.New("malformed key list from ssh-pkcs11-helper")
	}
	var out []*Identity
	rest := m.Rest
	for range m.N {
		var k struct {
			Blob  []byte
			Label string
			Rest  []byte `ssh:"rest"`
		}
		if err := ssh.Unmarshal(rest, &k); err != nil {
			return nil, errors.New("malformed key list from ssh-pkcs11-helper")
		}
		rest = k.Rest
		pub, err := ssh.ParsePublicKey(k.Blob)
		if err != nil {
			return nil, fmt.Errorf("key from ssh-pkcs11-helper: %w", err)
		}
		signer, err := ssh.NewSignerFromSigner(&pkcs11Signer{h: h, pub: pub})
		if err != nil {
			return nil, fmt.Errorf("key from ssh-pkcs11-helper: %w", err)
		}
		mk := func(key ssh.PublicKey, s ssh.Signer) *Identity {
			id := &Identity{Key: key, Comment: h.provider, Provider: h.provider, Source: Added, Confirm: cons.confirm, Dest: cons.dest, signer: s}
			if cons.lifetime > 0 {
				id.Expires = time.Now().Add(time.Duration(cons.lifetime) * time.Second)
			}
			h.hold(id)
			return id
		}
		if !cons.certOnly {
			out = append(out, mk(pub, signer))
		}
		for _, cert := range cons.certs {
			if samePublic(cert, pub) {
				cs, err := ssh.NewCertSigner(cert, signer)
				if err != nil {
					return nil, err
				}
				out = append(out, mk(cert, cs))
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no key of the token is usable")
	}
	return out, nil
}

// removeSmartcard stops a provider's helper and removes its keys.
func (c *conn) removeSmartcard(p []byte) error {
	var m smartcardMsg
	if err := ssh.Unmarshal(p, &m); err != nil {
		return c.refuse("refusing a malformed PKCS#11 request")
	}
	clear(m.PIN)
	real, err := providerAllowed(m.Provider, "*")
	if err != nil {
		return c.refuse("refusing to remove PKCS#11 keys: " + err.Error())
	}
	set := &c.srv.pkcs11
	set.mu.Lock()
	gone, err := c.srv.Keys.RemoveProvider(real, c.run())
	h := set.helpers[real]
	if err == nil {
		delete(set.helpers, real)
	}
	set.mu.Unlock()
	if err != nil {
		return c.refuse("refusing to remove PKCS#11 keys: "+err.Error(), "provider", real)
	}
	if h != nil {
		h.stop()
	}
	// A provider that is not loaded succeeds too, as with OpenSSH 10
	// ("ssh-add -e; ssh-add -s" scripts reload a token so).
	c.log.Info("PKCS#11 keys removed", "provider", real, "keys", len(gone), "loaded", h != nil)
	c.recordRemoved(gone)
	return nil
}

// stopPKCS11 stops every helper (the gateway is stopping).
func (s *Server) stopPKCS11() {
	s.pkcs11.mu.Lock()
	defer s.pkcs11.mu.Unlock()
	for p, h := range s.pkcs11.helpers {
		h.stop()
		delete(s.pkcs11.helpers, p)
	}
}

// pkcs11Signer is a crypto.Signer whose private key is in a token.
type pkcs11Signer struct {
	h   *pkcs11Helper
	pub ssh.PublicKey
}

func (s *pkcs11Signer) Public() crypto.PublicKey {
	return s.pub.(ssh.CryptoPublicKey).CryptoPublicKey()
}

// digestInfo prefixes of PKCS #1 v1.5 signatures (RFC 8017, 9.2).
var digestInfo = map[crypto.Hash][]byte{
	crypto.SHA1:   {0x30, 0x21, 0x30, 0x09, 0x06, 0x05, 0x2b, 0x0e, 0x03, 0x02, 0x1a, 0x05, 0x00, 0x04, 0x14},
	crypto.SHA256: {0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20},
	crypto.SHA512: {0x30, 0x51, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x03, 0x05, 0x00, 0x04, 0x40},
}

func (s *pkcs11Signer) Sign(_ io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	data := digest
	switch s.Public().(type) {
	case *rsa.PublicKey:
		prefix, ok := digestInfo[opts.HashFunc()]
		if !ok {
			return nil, fmt.Errorf("PKCS#11: no RSA signatures with %v", opts.HashFunc())
		}
		data = append(append([]byte{}, prefix...), digest...)
	case *ecdsa.PublicKey:
	default:
		return nil, fmt.Errorf("PKCS#11: no signatures with %s keys", s.pub.Type())
	}
	req := append([]byte{msgSignRequest}, ssh.Marshal(signRequestMsg{KeyBlob: s.pub.Marshal(), Data: data})...)
	resp, err := s.h.exchange(req, s.h.touchTimeout())
	if err != nil {
		return nil, err
	}
	var m struct {
		Sig  []byte
		Rest []byte `ssh:"rest"`
	}
	if len(resp) == 0 || resp[0] != msgSignResponse || ssh.Unmarshal(resp[1:], &m) != nil {
		return nil, errors.New("the token refused to sign")
	}
	return m.Sig, nil
}
