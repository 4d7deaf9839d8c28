package sshagent

import (
	"bytes"
	"crypto/dsa"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
)

// An upstream agent (postern agent --upstream SOCKET, upstream = in
// postern.toml) keeps its keys where they are — a YubiKey behind
// yubikey-agent, a TPM behind ssh-tpm-agent, 1Password, gpg-agent,
// another ssh-agent — and postern gates them: its identities are listed
// beside postern's own, and a signature with one of them goes through
// the same checks as postern's own keys (the requester verified again,
// the session bindings, the decision) before it is sent to the upstream
// agent, which signs while the connection's goroutine makes the audit
// record durable: the signature leaves once it is. The upstream's own
// confirmations (ssh-add -c on it, a touch) still happen, after
// postern's; postern waits for them as long as for a touch
// (Server.TouchTimeout).
//
// Each client connection gets its own connection to the upstream agent,
// opened when first needed, and the session bindings postern verified
// on the client's connection are sent on it too, in order, so that the
// upstream applies its own destination restrictions (ssh-add -h) and its
// own rules for forwarded connections to what the client really is. No
// other extension is passed on: an extension could sign. A connection
// that never carried a session-bind holds no state at the upstream: when
// its client goes, it is kept (a few at most) for the next client
// without bindings, which then does not wait for a connection to be
// opened and accepted. One the upstream closed meanwhile is replaced
// once, when it answered nothing.
//
// Adds and removes follow UpstreamAgent.Changes. Locking postern
// (ssh-add -x) hides the upstream's keys too and is not passed on.

// UpstreamChanges says where ssh-add's adds and removes go when there is
// an upstream agent.
type UpstreamChanges int

const (
	// UpstreamRefuse: keys added with ssh-add are postern's own; a
	// removal of a key only the upstream holds is refused, and ssh-add -D
	// removes postern's added keys only.
	UpstreamRefuse UpstreamChanges = iota
	// UpstreamForward: keys added with ssh-add go to the upstream agent,
	// and removals go to postern and to the upstream.
	UpstreamForward
)

// An UpstreamAgent is the agent whose keys postern lists and gates.
type UpstreamAgent struct {
	Socket  string
	Changes UpstreamChanges

	held    atomic.Bool // adds and removes refused from now on, whatever Changes says
	stopped atomic.Bool // the upstream is used no more: its keys neither listed nor signing
	idle    linkPool    // connections without bindings, kept for the next client
	// silent: a listing went unanswered for upstreamTimeout. Until a
	// listing is answered again (asked in the background, one at a time:
	// probing), a client's listing goes on without the upstream's keys
	// at once, where each would wait upstreamTimeout.
	silent  atomic.Bool
	probing atomic.Bool
}

// HoldChanges refuses adds and removes for the upstream agent from now on,
// as UpstreamRefuse does: for a gateway that learns, once running, that
// forwarding them was never approved.
func (u *UpstreamAgent) HoldChanges() { u.held.Store(true) }

// Stop stops using the upstream agent from now on: its keys are no
// longer listed, none signs, and adds and removes are refused as
// HoldChanges refuses them. For a gateway that learns, once running,
// that the upstream agent it started with was never approved.
func (u *UpstreamAgent) Stop() {
	u.held.Store(true)
	u.stopped.Store(true)
}

// Stopped reports whether Stop was called.
func (u *UpstreamAgent) Stopped() bool { return u.stopped.Load() }

// inUse reports whether u is set and not stopped.
func (u *UpstreamAgent) inUse() bool { return u != nil && !u.stopped.Load() }

// Forwards reports whether ssh-add's adds and removes go to the upstream
// agent.
func (u *UpstreamAgent) Forwards() bool { return u.Changes == UpstreamForward && !u.held.Load() }

// signUpstream has the upstream agent sign, after the decision: the key
// as the upstream listed it, the data and flags as the client sent them.
// Once the request is on its way, record makes the allow's record
// durable (recorded is what it returned) while the upstream signs; a
// signature is returned only once it is. The upstream may wait for its
// own confirmation or a touch, for as long as a security key's touch.
// Nothing is sent when postern was locked since it had been locked locks
// times (Keyring.Locks, before the decision); a signature that arrives
// after a lock is dropped by the caller, which checks once more for
// every key when the record is durable.
func (c *conn) signUpstream(id *Identity, data []byte, flags uint32, locks uint64, record func() error) (sig *ssh.Signature, recorded, err error) {
	if err := c.srv.Keys.stillOpen(locks); err != nil {
		return nil, record(), err
	}
	if !c.srv.Upstream.inUse() {
		return nil, record(), errUpstreamStopped
	}
	msg := append([]byte{msgSignRequest}, ssh.Marshal(signRequestMsg{KeyBlob: id.Blob(), Data: data, Flags: flags})...)
	wait := c.srv.touchTimeout()
	u, err := c.upstreamSend(msg, wait)
	err = touchErr(err)
	if recorded = record(); recorded != nil && err == nil {
		// Nothing it signs may leave: the upstream need not wait for
		// its confirmation either.
		c.dropUpstream()
		return nil, recorded, nil
	}
	if err != nil {
		return nil, recorded, err
	}
	resp, err := c.upstreamReply(u, msg, wait)
	if err != nil {
		return nil, recorded, touchErr(err)
	}
	var m struct {
		Sig  []byte
		Rest []byte `ssh:"rest"`
	}
	sig = new(ssh.Signature)
	switch {
	case len(resp) == 0 || resp[0] != msgSignResponse:
		return nil, recorded, errors.New("the upstream agent refused to sign")
	case ssh.Unmarshal(resp[1:], &m) != nil || len(m.Rest) != 0 || ssh.Unmarshal(m.Sig, sig) != nil:
		return nil, recorded, errors.New("the upstream agent sent a malformed signature")
	}
	if err := checkUpstreamSig(id.Key, data, flags, sig); err != nil {
		return nil, recorded, err
	}
	return sig, recorded, nil
}

// touchErr is err, from a sign request's exchange with the upstream
// agent, where an upstream that did not answer in time is one whose
// confirmation or touch nobody gave (errTouchTimeout).
func touchErr(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("%w: %w", errTouchTimeout, err)
	}
	return err
}

// checkUpstreamSig checks that sig, which the upstream agent sent back,
// is the signature asked for: by key, over data, with the algorithm the
// flags chose for an RSA key (as postern's own keys sign). Anything else
// the upstream made for another request, or with another key.
func checkUpstreamSig(key ssh.PublicKey, data []byte, flags uint32, sig *ssh.Signature) error {
	if plainKey(key).Type() == ssh.KeyAlgoRSA {
		want := ssh.KeyAlgoRSA
		switch {
		case flags&flagRSASHA256 != 0:
			want = ssh.KeyAlgoRSASHA256
		case flags&flagRSASHA512 != 0:
			want = ssh.KeyAlgoRSASHA512
		}
		if sig.Format != want {
			return fmt.Errorf("the upstream agent signed with %q, not %s as asked", sig.Format, want)
		}
	}
	if err := key.Verify(data, sig); err != nil {
		return errors.New("the upstream agent sent a signature that is not by the key asked for, over the data sent")
	}
	return nil
}

var errUpstreamStopped = errors.New("the upstream agent is not the approved one: it is used no more until the gateway restarts")

// forwardsChanges reports whether ssh-add's adds and removes go to the
// upstream agent.
func (c *conn) forwardsChanges() bool {
	// Never from a run's socket, nor from a connection that came
	// through ssh: neither the gated program nor a host the agent is
	// forwarded to changes (nor wipes) the keys of the user's upstream
	// agent, which changes reach without a card, and their changes to
	// postern's own keys are paced and recorded key by key.
	return c.srv.Upstream != nil && c.srv.Upstream.Forwards() && c.ep.Channel.Kind != approvals.ChannelRun && !c.remote()
}

// addUpstream passes an add request (msg: its type and payload) to the
// upstream agent, once it parses, its constraints too. When postern
// holds a copy of the key itself, listed and used before the
// upstream's, they are kept for the key as an add here keeps them
// (kept.go), so that its copy is used under them as well. The add is
// recorded once the upstream agent made it, and
// taken back when its record cannot be written: postern signs with the
// key only after recording that too.
func (c *conn) addUpstream(msg []byte) error {
	// Parsing wipes the private key it reads: what is sent is a copy.
	fwd := bytes.Clone(msg)
	defer clear(fwd)
	defer clear(msg)
	k, rest, err := parseAddedKey(msg[1:])
	if err != nil {
		return c.refuse("refusing to add key: " + err.Error())
	}
	pub, err := k.publicKey()
	wipe(k.priv)
	if err != nil {
		return c.refuse("refusing to add key: " + err.Error())
	}
	// A connection that came through ssh forwards nothing
	// (forwardsChanges): no provider library it names reaches the
	// upstream, which would load it.
	comment, cons, err := parseAddTail(rest, msg[0] == msgAddIDConstrained)
	if err != nil {
		return c.refuse("refusing to add key: " + err.Error())
	}
	id := &Identity{Key: pub, Comment: comment, Source: Upstream, Confirm: cons.confirm, Dest: cons.dest}
	kept := &Identity{Key: pub, Source: Added, Confirm: cons.confirm, Dest: cons.dest, sk: k.sk}
	fp := id.Fingerprint()
	if err := c.changeUpstream(fwd, "add the key", "key", fp, "type", pub.Type()); err != nil {
		return err
	}
	record := func() error { return c.recordKey(KeyEvent(audit.EventAgentKeyAdded, id, "")) }
	if err := c.srv.Keys.KeepRecorded(kept, record); err != nil {
		undo := append([]byte{msgRemoveIdentity}, ssh.Marshal(keyBlobMsg{KeyBlob: pub.Marshal()})...)
		c.changeUpstream(undo, "remove the key whose add was not recorded", "key", fp)
		return c.refuse("refusing to add key: "+err.Error(), "key", fp)
	}
	return nil
}

// changeUpstream sends a request that changes the upstream agent's keys
// (to "what", for the log) and wants SSH_AGENT_SUCCESS back.
func (c *conn) changeUpstream(msg []byte, what string, args ...any) error {
	resp, err := c.upstreamCall(msg, upstreamTimeout)
	switch {
	case err != nil:
		return c.refuse("refusing to "+what+": "+err.Error(), args...)
	case len(resp) == 0 || resp[0] != msgSuccess:
		return c.refuse("the upstream agent refused to "+what, args...)
	}
	c.log.Info("the upstream agent did "+what, args...)
	return nil
}

// removeUpstream applies a removal of key, which postern's keyring
// answered with ownErr, to the upstream agent as configured.
func (c *conn) removeUpstream(msg []byte, key ssh.PublicKey, ownErr error) error {
	fp := ssh.FingerprintSHA256(plainKey(key))
	ids, err := c.upstreamIdentities() // now, not as last listed
	if err != nil {
		return c.refuse("refusing to remove key: "+err.Error(), "key", fp)
	}
	if findKey(ids, key) == nil {
		return ownErr
	}
	if !c.forwardsChanges() {
		if ownErr == nil {
			c.log.Info("key removed; the upstream agent's copy stays (upstream_changes = refuse)", "key", fp)
			return nil
		}
		return c.refuse("refusing to remove a key the upstream agent holds (upstream_changes = refuse)", "key", fp)
	}
	if err := c.changeUpstream(msg, "remove the key", "key", fp); err != nil {
		return err
	}
	c.recordRemoved([]*Identity{{Key: key, Source: Upstream}})
	return nil
}

// removeAllUpstream removes every key of the upstream agent, when
// removals go there.
func (c *conn) removeAllUpstream() error {
	if !c.forwardsChanges() {
		return nil
	}
	if err := c.changeUpstream([]byte{msgRemoveAllIdentities}, "remove all its keys"); err != nil {
		return err
	}
	// Which keys it held is the upstream's to say: the event names none.
	all := audit.Event{Type: audit.EventAgentKeyRemoved, Reason: audit.ReasonRemoved, Detail: map[string]string{"key_holder": Upstream.String()}}
	if err := c.recordKey(all); err != nil {
		c.log.Error("the upstream agent's keys removed, the audit event not written", "err", err)
	}
	return nil
}

// publicKey returns the public key (or certificate) of an added key.
func (k *addedKey) publicKey() (ssh.PublicKey, error) {
	switch {
	case k.cert != nil:
		return k.cert, nil
	case k.sk != nil:
		return k.sk.pub, nil
	}
	if d, ok := k.priv.(*dsa.PrivateKey); ok {
		return dsaSigner{d}.PublicKey(), nil
	}
	s, err := ssh.NewSignerFromKey(k.priv)
	if err != nil {
		return nil, err
	}
	return s.PublicKey(), nil
}
