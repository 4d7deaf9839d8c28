package sshagent

import (
	"errors"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
)

// dispatch answers one message and logs it at debug level (postern agent
// -d): the request, the answer and the time it took.
func (c *conn) dispatch(msg []byte) []byte {
	start := time.Now()
	out := c.answer(msg)
	c.log.Debug("request", "type", msgNames[msg[0]], "bytes", len(msg), "answer", msgNames[out[4]], "took", time.Since(start))
	return out
}

// msgNames names the messages in the debug log.
var msgNames = map[byte]string{
	msgFailure: "FAILURE", msgSuccess: "SUCCESS", msgRemoveAllRSAIdentities: "REMOVE_ALL_RSA_IDENTITIES",
	msgRequestIdentities: "REQUEST_IDENTITIES", msgIdentitiesAnswer: "IDENTITIES_ANSWER",
	msgSignRequest: "SIGN_REQUEST", msgSignResponse: "SIGN_RESPONSE", msgAddIdentity: "ADD_IDENTITY",
	msgRemoveIdentity: "REMOVE_IDENTITY", msgRemoveAllIdentities: "REMOVE_ALL_IDENTITIES",
	msgAddSmartcardKey: "ADD_SMARTCARD_KEY", msgRemoveSmartcardKey: "REMOVE_SMARTCARD_KEY",
	msgLock: "LOCK", msgUnlock: "UNLOCK", msgAddIDConstrained: "ADD_ID_CONSTRAINED",
	msgAddSmartcardKeyConstrained: "ADD_SMARTCARD_KEY_CONSTRAINED", msgExtension: "EXTENSION",
	msgExtensionFailure: "EXTENSION_FAILURE", msgExtensionResponse: "EXTENSION_RESPONSE",
}

// answer answers one message (its type byte and payload), as OpenSSH
// 10's ssh-agent does: while locked, only UNLOCK, an empty identity list
// and session-bind@openssh.com are answered (a sign request is refused
// and recorded); an unknown message gets SSH_AGENT_FAILURE.
func (c *conn) answer(msg []byte) []byte {
	typ, p := msg[0], msg[1:]
	if c.srv.Keys.Locked() {
		switch typ {
		case msgUnlock, msgSignRequest:
		case msgRequestIdentities:
			return identitiesAnswer(nil)
		case msgExtension:
			return c.extension(p, true)
		default:
			c.log.Info("refusing a request while locked", "type", typ)
			clearAdd(msg)
			return replyFailure
		}
	}
	switch typ {
	case msgRequestIdentities:
		ids, err := c.visible()
		if err != nil {
			return replyFailure
		}
		return identitiesAnswer(ids)
	case msgSignRequest:
		return c.signRequest(p)
	case msgAddIdentity, msgAddIDConstrained:
		if !c.paced() {
			clearAdd(msg)
			return replyFailure
		}
		if c.forwardsChanges() {
			return status(c.addUpstream(msg) == nil)
		}
		if err := c.add(p, typ == msgAddIDConstrained); err != nil {
			// Nothing refers to a refused add: what parsing left of its
			// key (one it could not parse, or not all of) goes.
			clear(msg)
			return replyFailure
		}
		return replySuccess
	case msgRemoveIdentity:
		return status(c.remove(msg) == nil)
	case msgRemoveAllIdentities, msgRemoveAllRSAIdentities:
		return status(c.removeAll() == nil)
	case msgAddSmartcardKey, msgAddSmartcardKeyConstrained:
		if !c.paced() {
			clearAdd(msg)
			return replyFailure
		}
		if err := c.addSmartcard(p, typ == msgAddSmartcardKeyConstrained); err != nil {
			clear(msg) // its PIN, also where it did not parse
			return replyFailure
		}
		return replySuccess
	case msgRemoveSmartcardKey:
		return status(c.removeSmartcard(p) == nil)
	case msgLock, msgUnlock:
		if c.ep.Channel.Kind == approvals.ChannelRun {
			// The gated program neither unlocks what the person locked
			// (nor guesses the passphrase) nor locks the person out.
			c.refuse("refusing to lock or unlock the agent from a run's socket")
			clear(p)
			return replyFailure
		}
		if c.remote() {
			// Nor does a host the agent is forwarded to (ssh -A binds
			// the connection so): ssh-add -X takes the vault's
			// passphrase, which it would guess.
			c.refuse("refusing to lock or unlock the agent through ssh (a forwarded agent)")
			clear(p)
			return replyFailure
		}
		var m passphraseMsg
		if err := ssh.Unmarshal(p, &m); err != nil {
			clear(p)
			return replyFailure
		}
		pass := m.Pass
		defer clear(pass)
		if typ == msgLock {
			return status(c.lock(pass) == nil)
		}
		return status(c.unlock(pass) == nil)
	case msgExtension:
		return c.extension(p, false)
	}
	c.log.Info("refusing an unknown message", "type", typ)
	return replyFailure
}

// clearAdd clears msg when it is an add or a lock, refused before it was
// parsed: its private key, a token's PIN, or a passphrase goes at once.
// (Parsing clears what it reads; what an added key's request leaves,
// its identity may still refer to.)
func clearAdd(msg []byte) {
	switch msg[0] {
	case msgAddIdentity, msgAddIDConstrained, msgAddSmartcardKey, msgAddSmartcardKeyConstrained, msgLock:
		clear(msg)
	}
}

func (c *conn) signRequest(p []byte) []byte {
	var m signRequestMsg
	if err := ssh.Unmarshal(p, &m); err != nil {
		c.log.Info("refusing a malformed sign request", "err", err)
		return replyFailure
	}
	key, err := parsePublicKey(m.KeyBlob)
	if err != nil {
		c.log.Info("refusing a sign request for a key that does not parse", "err", err)
		return replyFailure
	}
	sig, err := c.sign(key, m.Data, m.Flags)
	if err != nil {
		return replyFailure
	}
	return reply(msgSignResponse, ssh.Marshal(struct{ Sig []byte }{ssh.Marshal(sig)}))
}

// add stores a key sent by ssh-add, with its constraints. A constraint the
// agent does not know is refused rather than ignored.
func (c *conn) add(p []byte, constrained bool) error {
	k, rest, err := parseAddedKey(p)
	if err != nil {
		return c.refuse("refusing to add key: " + err.Error())
	}
	comment, cons, err := parseAddTail(rest, constrained)
	if err == nil && cons.hasCertsExt {
		err = errNotHere(ExtAssociatedCerts)
	}
	var id *Identity
	if err == nil {
		id, err = c.identityFor(k, comment, cons.skProvider)
	}
	if err != nil {
		wipe(k.priv)
		return c.refuse("refusing to add key: " + err.Error())
	}
	id.Source, id.Run, id.Forwarded = Added, c.run(), c.remote()
	id.Confirm = cons.confirm
	id.Dest = cons.dest
	if cons.lifetime > 0 {
		id.Expires = c.srv.Keys.now().Add(time.Duration(cons.lifetime) * time.Second)
	}
	record := func() error { return c.recordKey(KeyEvent(audit.EventAgentKeyAdded, id, "")) }
	if err := c.srv.Keys.AddRecorded(id, record); err != nil {
		return c.refuse("refusing to add key: "+err.Error(), "key", id.Fingerprint())
	}
	c.log.Info("key added", "key", id.Fingerprint(), "type", id.Key.Type(), "comment", id.Comment, "confirm", id.Confirm,
		"lifetime", cons.lifetime, "destinations", len(id.Dest), "provider", id.Provider)
	return nil
}

// identityFor makes the identity for an added key. A FIDO key needs a
// provider from the allow-list, added from this machine: OpenSSH refuses
// to load providers for a forwarded connection, and so does postern.
func (c *conn) identityFor(k *addedKey, comment, provider string) (*Identity, error) {
	if k.sk == nil {
		if provider != "" {
			return nil, errNotHere(ExtSKProvider + " for a key that is not a security key")
		}
		return NewIdentity(k.priv, k.cert, comment)
	}
	switch {
	case provider == "":
		return nil, errString("a security key needs its provider (SecurityKeyProvider, SSH_SK_PROVIDER)")
	case strings.EqualFold(provider, "internal"):
		return nil, errString("the internal security key provider is not available; use a provider library")
	case c.remote():
		return nil, errString("providers are not loaded for a forwarded connection")
	}
	real, err := providerAllowed(provider, c.srv.Providers)
	if err != nil {
		return nil, err
	}
	return newSKIdentity(k.sk, real, comment, c.srv.touchTimeout), nil
}

// remote reports whether the connection came through ssh: it attempted a
// session-bind. Such a connection may not make the agent load a provider.
func (c *conn) remote() bool { return c.binds.attempted }

// run is the id of the run whose socket the connection came through, ""
// for the person's sockets.
func (c *conn) run() string {
	if c.ep.Channel.Kind == approvals.ChannelRun {
		return c.ep.Channel.Run
	}
	return ""
}

// remove removes a key (msg: REMOVE_IDENTITY) from postern's added
// keys and, as configured, from the upstream agent.
func (c *conn) remove(msg []byte) error {
	var m keyBlobMsg
	if err := ssh.Unmarshal(msg[1:], &m); err != nil {
		return c.refuse("refusing a malformed remove request")
	}
	key, err := parsePublicKey(m.KeyBlob)
	if err != nil {
		return c.refuse("refusing to remove a key that does not parse")
	}
	gone, err := c.srv.Keys.Remove(key, c.run())
	if err == nil {
		c.log.Info("key removed", "key", ssh.FingerprintSHA256(key))
		c.recordRemoved(gone)
	}
	if c.srv.Upstream.inUse() && (errors.Is(err, ErrNotFound) || err == nil) {
		err = c.removeUpstream(msg, key, err)
	}
	if err != nil && !errors.Is(err, errRefused) {
		return c.refuse("refusing to remove key: "+err.Error(), "key", ssh.FingerprintSHA256(key))
	}
	return err
}

// removeAll removes the added keys the connection may remove (a run's
// socket, those the run added) and, as configured, the upstream agent's.
func (c *conn) removeAll() error {
	gone, err := c.srv.Keys.RemoveAll(c.run())
	if err != nil {
		return c.refuse("refusing to remove keys: " + err.Error())
	}
	c.log.Info("all added keys removed", "keys", len(gone))
	c.recordRemoved(gone)
	return c.removeAllUpstream()
}

func (c *conn) lock(pass []byte) error {
	if err := c.srv.Locker.Lock(pass); err != nil {
		return c.refuse("refusing to lock: " + err.Error())
	}
	return nil
}

func (c *conn) unlock(pass []byte) error {
	if err := c.srv.Locker.Unlock(pass); err != nil {
		return c.refuse("refusing to unlock: " + err.Error())
	}
	return nil
}

// extension answers session-bind@openssh.com (also while locked, so
// that new connections can bind) and query. A failed extension gets
// SSH_AGENT_EXTENSION_FAILURE, an unknown one SSH_AGENT_FAILURE, as
// OpenSSH 10 answers.
func (c *conn) extension(p []byte, locked bool) []byte {
	var m extensionMsg
	if err := ssh.Unmarshal(p, &m); err != nil {
		c.log.Info("refusing a malformed extension request")
		return replyFailure
	}
	switch {
	case m.Name == ExtSessionBind:
		c.binds.attempted = true
		b, err := parseSessionBind(m.Contents)
		if err == nil {
			err = c.binds.add(b)
		}
		if err != nil {
			c.binds.failed = true
			c.log.Warn("session-bind refused", "err", err)
			return replyExtensionFailure
		}
		if err := c.bindUpstream(b.raw); err != nil {
			c.log.Warn("session-bind not passed to the upstream agent", "err", err)
		}
		c.log.Debug("session bound", "hostkey", ssh.FingerprintSHA256(b.HostKey), "forwarding", b.Forwarding, "hops", len(c.binds.list))
		return replySuccess
	case m.Name == ExtWhy && c.srv.Why != nil && c.remote():
		// A connection that came through ssh is, when it is forwarded
		// (ssh -A binds it so), a host's: it may ask for signatures,
		// each decided here, but is not told what was decided for the
		// person's programs (their hosts, keys, namespaces, processes).
		c.log.Info("refusing why@postern on a connection that came through ssh", "forwarding", c.binds.forwarding())
		return replyExtensionFailure
	case m.Name == ExtWhy && c.srv.Why != nil:
		// Also while locked: "the vault is locked" is an answer.
		body, err := c.srv.Why(c.peer, c.ep.Channel)
		if err != nil {
			c.log.Info("why@postern failed", "err", err)
			return replyExtensionFailure
		}
		return reply(msgExtensionResponse, ssh.Marshal(struct{ Name, Body string }{ExtWhy, string(body)}))
	case locked:
		c.log.Info("refusing an extension while locked", "extension", m.Name)
		return replyFailure
	case m.Name == ExtQuery:
		// The reply names the extension, then lists those supported
		// besides query itself, as OpenSSH's agent does.
		return reply(msgExtensionResponse, ssh.Marshal(struct{ Name, Ext string }{ExtQuery, ExtSessionBind}))
	}
	c.log.Info("refusing an unknown extension", "extension", m.Name)
	return replyFailure
}

type errString string

func (e errString) Error() string { return string(e) }

const errTrailing = errString("trailing data after the key")

func errNotHere(what string) error { return errString(what + " is not valid here") }
