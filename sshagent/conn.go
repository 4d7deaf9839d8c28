package sshagent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/procid"
)

// Extension names this agent answers.
const (
	ExtSessionBind = "session-bind@openssh.com"
	ExtQuery       = "query"
)

// SSH_AGENT_EXTENSION_RESPONSE, from draft-ietf-sshm-ssh-agent.
const msgExtensionResponse = 29

// conn is the agent as one client connection sees it: it implements
// agent.ExtendedAgent over the shared keyring, with the connection's
// verified peer and session bindings.
type conn struct {
	srv   *Server
	ep    *Endpoint
	ctx   context.Context
	peer  *procid.Peer
	log   *slog.Logger
	binds bindings
}

var _ agent.ExtendedAgent = (*conn)(nil)

// errRefused is returned for requests the agent declines; the client gets
// SSH_AGENT_FAILURE and the reason is logged here, not sent.
var errRefused = errors.New("refused")

func (c *conn) refuse(msg string, args ...any) error {
	c.log.Info(msg, args...)
	return errRefused
}

// List returns the identities this connection may see: while locked none;
// keys restricted to destinations only where the connection's bindings
// allow them.
func (c *conn) List() ([]*agent.Key, error) {
	if c.binds.failed {
		return nil, c.refuse("refusing to list keys: an earlier session-bind failed on this connection")
	}
	ids, err := c.srv.Keys.Identities()
	if errors.Is(err, ErrLocked) {
		return []*agent.Key{}, nil
	}
	if err != nil {
		return nil, err
	}
	keys := make([]*agent.Key, 0, len(ids))
	for _, id := range ids {
		if permitted(id.Dest, c.binds.list, "") != nil {
			continue
		}
		keys = append(keys, &agent.Key{Format: id.Key.Type(), Blob: id.Key.Marshal(), Comment: id.Comment})
	}
	return keys, nil
}

func (c *conn) Sign(key ssh.PublicKey, data []byte) (*ssh.Signature, error) {
	return c.SignWithFlags(key, data, 0)
}

// SignWithFlags checks the request against the connection's bindings and
// the key's constraints, asks the Decider, and signs only on an allow.
func (c *conn) SignWithFlags(key ssh.PublicKey, data []byte, flags agent.SignatureFlags) (*ssh.Signature, error) {
	req := &approvals.Request{
		Requester: c.peer,
		Channel:   c.ep.Channel,
		Key:       approvals.Key{Fingerprint: ssh.FingerprintSHA256(key), Type: key.Type()},
		Purpose:   approvals.PurposeOther,
		Forwarded: c.binds.forwarding(),
	}
	refuse := func(reason audit.Reason, msg string) (*ssh.Signature, error) {
		c.srv.Decider.Refused(req, reason)
		return nil, c.refuse("refusing to sign: "+msg, "key", req.Key.Fingerprint, "reason", reason)
	}
	if c.binds.failed {
		return refuse(audit.ReasonSessionBindFailed, "an earlier session-bind failed on this connection")
	}
	id, err := c.srv.Keys.Lookup(key)
	if errors.Is(err, ErrLocked) {
		return refuse(audit.ReasonVaultLocked, "the agent is locked")
	}
	if err != nil {
		return refuse(audit.ReasonKeyNotHeld, "key not held")
	}
	req.Key = approvals.Key{Fingerprint: id.Fingerprint(), Comment: id.Comment, Type: id.Key.Type(), Confirm: id.Confirm}
	sd, err := parseSignData(data, key)
	if err != nil {
		return refuse(audit.ReasonMalformedRequest, err.Error())
	}
	if err := c.checkBinding(id, &sd); err != nil {
		return refuse(audit.ReasonBindingViolation, err.Error())
	}
	switch sd.kind {
	case signUserauth:
		req.Purpose = approvals.PurposeAuth
		if last := c.binds.last(); last != nil {
			req.Dest = &approvals.Destination{
				HostKey:    last.HostKey,
				User:       sd.user,
				Forwarding: c.binds.forwarding(),
				Hops:       len(c.binds.list),
			}
		}
	case signSSHSig:
		req.Purpose = approvals.PurposeSSHSig
		req.Namespace = sd.namespace
	}
	start := time.Now()
	d := c.srv.Decider.Decide(c.ctx, req)
	if !d.Allow {
		return nil, c.refuse("refused to sign", "key", req.Key.Fingerprint, "reason", d.Reason, "mode", d.Mode)
	}
	// The decision may have waited for a person: the requester must still
	// be the process it was when it asked.
	if time.Since(start) > time.Millisecond {
		if err := c.peer.Verify(); err != nil {
			return refuse(audit.ReasonIdentityMismatch, "requester changed while waiting for approval: "+err.Error())
		}
	}
	sig, err := c.srv.Keys.Sign(id, data, flags)
	if err != nil {
		return refuse(audit.ReasonSigningFailed, err.Error())
	}
	attrs := []any{"key", req.Key.Fingerprint, "purpose", req.Purpose, "reason", d.Reason}
	if d.Grant != "" {
		attrs = append(attrs, "grant", d.Grant)
	}
	if req.Channel.Run != "" {
		attrs = append(attrs, "run", req.Channel.Run)
	}
	if req.Dest != nil {
		attrs = append(attrs, "dest", req.Dest.Fingerprint(), "forwarding", req.Dest.Forwarding)
	}
	c.log.Info("signed", attrs...)
	return sig, nil
}

// checkBinding applies ssh-agent's session-bind rules to a sign request:
// a userauth request must carry the session id of the most recent binding
// and, when hostbound, its host key; keys restricted to destinations need
// a bound connection whose hops they permit.
func (c *conn) checkBinding(id *Identity, sd *signData) error {
	last := c.binds.last()
	if sd.kind == signUserauth && last != nil {
		if !bytes.Equal(sd.sessionID, last.SessionID) {
			return errors.New("userauth session id does not match the connection's session-bind")
		}
		if sd.hostKey != nil && !bytes.Equal(sd.hostKey.Marshal(), last.HostKey.Marshal()) {
			return errors.New("host key in the userauth request differs from the bound host key")
		}
	}
	if len(id.Dest) == 0 {
		return nil
	}
	switch {
	case last == nil:
		return errors.New("destination-restricted key on a connection without session-bind")
	case sd.kind != signUserauth:
		return errors.New("destination-restricted key asked to sign something other than a userauth request")
	case len(c.binds.list) > 1 && sd.hostKey == nil:
		return errors.New("destination-restricted key: forwarded connection without a host key in the request")
	}
	return permitted(id.Dest, c.binds.list, sd.user)
}

// Add stores a key sent by ssh-add, with its constraints. A constraint the
// agent does not know is refused rather than ignored.
func (c *conn) Add(key agent.AddedKey) error {
	id, err := NewIdentity(key.PrivateKey, key.Certificate, key.Comment)
	if err != nil {
		return c.refuse("refusing to add key: " + err.Error())
	}
	id.Source = Added
	id.Confirm = key.ConfirmBeforeUse
	if key.LifetimeSecs > 0 {
		id.Expires = c.srv.Keys.now().Add(time.Duration(key.LifetimeSecs) * time.Second)
	}
	for _, ext := range key.ConstraintExtensions {
		if ext.ExtensionName != ExtRestrictDestination || id.Dest != nil {
			wipe(id.priv)
			return c.refuse("refusing to add key: unsupported or repeated constraint", "constraint", ext.ExtensionName)
		}
		if id.Dest, err = parseDestConstraints(ext.ExtensionDetails); err != nil {
			wipe(id.priv)
			return c.refuse("refusing to add key: " + err.Error())
		}
	}
	if err := c.srv.Keys.Add(id); err != nil {
		return c.refuse("refusing to add key: " + err.Error())
	}
	c.log.Info("key added", "key", id.Fingerprint(), "comment", id.Comment, "confirm", id.Confirm,
		"lifetime", key.LifetimeSecs, "destinations", len(id.Dest))
	return nil
}

func (c *conn) Remove(key ssh.PublicKey) error {
	if err := c.srv.Keys.Remove(key); err != nil {
		return c.refuse("refusing to remove key: "+err.Error(), "key", ssh.FingerprintSHA256(key))
	}
	c.log.Info("key removed", "key", ssh.FingerprintSHA256(key))
	return nil
}

func (c *conn) RemoveAll() error {
	if err := c.srv.Keys.RemoveAll(); err != nil {
		return c.refuse("refusing to remove keys: " + err.Error())
	}
	c.log.Info("all added keys removed")
	return nil
}

func (c *conn) Lock(passphrase []byte) error {
	defer clear(passphrase)
	if err := c.srv.Locker.Lock(passphrase); err != nil {
		return c.refuse("refusing to lock: " + err.Error())
	}
	return nil
}

func (c *conn) Unlock(passphrase []byte) error {
	defer clear(passphrase)
	if err := c.srv.Locker.Unlock(passphrase); err != nil {
		return c.refuse("refusing to unlock: " + err.Error())
	}
	return nil
}

// Signers is not part of the wire protocol.
func (c *conn) Signers() ([]ssh.Signer, error) {
	return nil, errors.New("not supported")
}

// Extension answers session-bind@openssh.com and query.
func (c *conn) Extension(name string, contents []byte) ([]byte, error) {
	switch name {
	case ExtSessionBind:
		b, err := parseSessionBind(contents)
		if err == nil {
			err = c.binds.add(b)
		}
		if err != nil {
			c.binds.failed = true
			c.log.Warn("session-bind refused", "err", err)
			return nil, err
		}
		c.log.Debug("session bound", "hostkey", ssh.FingerprintSHA256(b.HostKey), "forwarding", b.Forwarding, "hops", len(c.binds.list))
		return nil, nil
	case ExtQuery:
		// The response echoes the extension name, then lists the
		// extensions this agent supports.
		reply := []byte{msgExtensionResponse}
		for _, s := range []string{ExtQuery, ExtQuery, ExtSessionBind} {
			reply = append(reply, ssh.Marshal(struct{ S string }{s})...)
		}
		return reply, nil
	}
	return nil, agent.ErrExtensionUnsupported
}

func (c *conn) String() string { return fmt.Sprintf("conn(%s)", c.peer.String()) }
