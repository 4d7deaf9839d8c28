package sshagent

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/connlimit"
	"github.com/postern/postern/internal/park"
	"github.com/postern/postern/internal/procid"
)

// Extension names this agent answers.
const (
	ExtSessionBind = "session-bind@openssh.com"
	ExtQuery       = "query"
	// ExtWhy asks what the gateway last decided for the caller (or, on a
	// run's socket, for that run): "postern why". The response's body is
	// the JSON the Server's Why returns.
	ExtWhy = "why@postern"
)

// conn is the agent as one client connection sees it: the shared keyring,
// with the connection's verified peer and session bindings.
type conn struct {
	srv   *Server
	ep    *Endpoint
	ctx   context.Context
	peer  *procid.Peer
	log   connLog
	binds bindings
	up    *upstreamLink // opened when the upstream agent is first needed

	// The connection's lifecycle (server.go, bare.go). c and sc are nil
	// while the connection is bare: then fd is its socket. mu guards c,
	// fd and bare against Close; only the goroutine that has the
	// connection changes them.
	mu   sync.Mutex
	c    *net.UnixConn
	sc   *procid.SenderConn
	fd   int
	bare bool
	slot *connlimit.Slot // nil without Server.Limits
	spot *park.Spot      // nil when it cannot be parked

	// For the barer (bare.go): the last time the connection was parked,
	// and whether it is in the barer's queue (guarded by barer.mu).
	parkedAt time.Duration
	queued   bool
}

// errRefused is returned for requests the agent declines; the client gets
// SSH_AGENT_FAILURE and the reason is logged here, not sent.
var errRefused = errors.New("refused")

func (c *conn) refuse(msg string, args ...any) error {
	c.log.Info(msg, args...)
	return errRefused
}

// visible returns the identities this connection may see: while locked
// none; keys restricted to destinations only where the connection's
// bindings allow them.
func (c *conn) visible() ([]*Identity, error) {
	if c.binds.failed {
		return nil, c.refuse("refusing to list keys: an earlier session-bind failed on this connection")
	}
	ids, err := c.srv.Keys.Identities()
	if errors.Is(err, ErrLocked) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	// A key postern holds hides the upstream's copy even where postern's
	// is not shown: that one would be used.
	ids = c.withUpstream(ids)
	out := ids[:0:0]
	for _, id := range ids {
		if _, dest := c.srv.Keys.Constraints(id); permitted(dest, c.binds.list, nil) == nil {
			out = append(out, id)
		}
	}
	// ssh offers the keys in the order listed, and sshd ends a login
	// after a few it refused (MaxAuthTries): the keys a run added come
	// after the others, but on that run's own socket, and those a host
	// the agent is forwarded to added after the person's, so that neither
	// can put keys of its own before the person's.
	slices.SortStableFunc(out, func(a, b *Identity) int { return c.listRank(a) - c.listRank(b) })
	return out, nil
}

// listRank orders a listing: first the keys added through the
// connection's own socket (for the person's sockets, all the person's
// keys), then the person's, then those a host the agent is forwarded to
// or another run added.
func (c *conn) listRank(id *Identity) int {
	switch {
	case id.Forwarded:
		return 2
	case id.Run == c.run():
		return 0
	case id.Run == "":
		return 1
	}
	return 2
}

// lookup finds the identity for key: postern's own, else the upstream
// agent's.
func (c *conn) lookup(key ssh.PublicKey) (*Identity, error) {
	id, err := c.srv.Keys.Lookup(key)
	if errors.Is(err, ErrNotFound) && c.srv.Upstream.inUse() {
		return c.lookupUpstream(key)
	}
	return id, err
}

// sign checks the request against the connection's bindings and
// the key's constraints, asks the Decider, and signs only on an allow.
func (c *conn) sign(key ssh.PublicKey, data []byte, flags uint32) (*ssh.Signature, error) {
	req := &approvals.Request{
		Requester: c.peer,
		Channel:   c.ep.Channel,
		Key:       approvals.Key{Type: key.Type()},
		Purpose:   approvals.PurposeOther,
		Forwarded: c.binds.forwarding(),
	}
	refuse := func(reason audit.Reason, msg string) (*ssh.Signature, error) {
		if req.Key.Fingerprint == "" {
			// Refused before its identity was found.
			req.Key.Fingerprint = ssh.FingerprintSHA256(key)
		}
		c.srv.Decider.Refused(req, reason)
		return nil, c.refuse("refusing to sign: "+msg, "key", req.Key.Fingerprint, "reason", reason)
	}
	// What the data is, for the record of a refusal too: one refused
	// before any decision (locked, key not held) is recorded as the
	// signature or login it is, in its namespace.
	sd, malformed := parseSignData(data, key)
	req.Purpose = sd.kind.purpose()
	if sd.kind == signSSHSig {
		req.Namespace = sd.namespace
		if malformed == nil {
			req.MessageHash = sd.hashAlg + ":" + hex.EncodeToString(sd.hash)
			req.Message = func() *approvals.SignedMessage {
				return boundedMessage(func() *approvals.SignedMessage {
					return findMessage(c.srv.Procs, c.peer.PID, sd.hashAlg, sd.hash)
				})
			}
		}
	}
	if c.binds.failed {
		return refuse(audit.ReasonSessionBindFailed, "an earlier session-bind failed on this connection")
	}
	id, err := c.lookup(key)
	switch {
	case errors.Is(err, ErrLocked):
		return refuse(audit.ReasonVaultLocked, "the agent is locked")
	case errors.Is(err, ErrNotFound):
		return refuse(audit.ReasonKeyNotHeld, "key not held")
	case err != nil:
		return refuse(audit.ReasonKeyNotHeld, "key not held: "+err.Error())
	}
	confirm, dest := c.srv.Keys.Constraints(id)
	req.Key = approvals.Key{Fingerprint: id.Fingerprint(), Comment: id.Comment, Comments: func() []string { return c.srv.KeyComments(id.Key) }, Type: id.Key.Type(), Confirm: confirm, Touch: id.Touch(), Upstream: id.Source == Upstream}
	if req.Key.Upstream && c.srv.Upstream != nil {
		req.Key.UpstreamSocket = c.srv.Upstream.Socket
	}
	// Every key signs while the allow's record is made durable, and the
	// signature leaves only once it is (Recorded, below): a key elsewhere
	// (the upstream agent, a token, a security key) while another
	// goroutine writes it; a key in memory, which signs in less time than
	// handing the record to another thread costs, while the write under
	// way goes on, its record written here when there is none (Enter).
	req.Overlap = true
	if malformed != nil {
		return refuse(audit.ReasonMalformedRequest, malformed.Error())
	}
	// The card shows the certificate a login presents to the server,
	// which may be another than the one the request names.
	shown := key
	if sd.named != nil {
		shown = sd.named
	}
	req.Key.Application, req.Key.Cert = keyFacts(shown)
	if strings.HasPrefix(plainKey(id.Key).Type(), "sk-") && !strings.HasPrefix(req.Key.Application, "ssh:") && sd.kind == signOther {
		// A key registered for a web origin signs only what SSH signs
		// (userauth, SSHSIG), never a web challenge, as ssh-agent; the
		// upstream agent's too, whatever the upstream would sign. (The
		// application is the key's: shown is the same public key.)
		return refuse(audit.ReasonMalformedRequest, "security key of a web origin asked to sign something other than an SSH request")
	}
	if err := c.checkBinding(dest, &sd); err != nil {
		return refuse(audit.ReasonBindingViolation, err.Error())
	}
	if last := c.binds.last(); sd.kind == signUserauth && last != nil && bytes.Equal(sd.sessionID, last.SessionID) {
		req.Dest = &approvals.Destination{
			HostKey:    last.HostKey,
			User:       sd.user,
			Forwarding: c.binds.forwarding(),
			Hops:       len(c.binds.list),
		}
	}
	// A lock from now on, even one undone by an unlock, voids the
	// decision (SignSince).
	locks := c.srv.Keys.Locks()
	start := time.Now()
	ctx, stop := c.whileConnected()
	d := c.srv.Decider.Decide(ctx, req)
	stop()
	if !d.Allow {
		return nil, c.refuse("refused to sign", "key", req.Key.Fingerprint, "reason", d.Reason, "mode", d.Mode)
	}
	// The decision may have waited for a person: the requester must still
	// be the process it was when it asked.
	if time.Since(start) > time.Millisecond {
		if err := c.peer.Verify(); err != nil {
			d.Recorded() // the allow, which the refusal follows
			if errors.Is(err, procid.ErrNoResources) {
				return refuse(audit.ReasonOutOfResources, "cannot check the requester after its approval: "+err.Error())
			}
			return refuse(audit.ReasonIdentityMismatch, "requester changed while waiting for approval: "+err.Error())
		}
	}
	var sig *ssh.Signature
	var recorded error
	if id.Source == Upstream {
		// The request goes to the upstream agent, then this goroutine
		// makes the record durable while the upstream signs.
		sig, recorded, err = c.signUpstream(id, data, flags, locks, d.Recorded)
	} else {
		// A token signs in this goroutine: the record is made durable
		// in another meanwhile; a key in memory signs once the record
		// is durable or waits behind another write.
		if id.Provider != "" {
			d.Begin()
		} else {
			d.Enter()
		}
		sig, err = c.srv.Keys.SignSince(locks, id, data, flags)
		recorded = d.Recorded()
	}
	// A lock that came while the record was made durable takes the
	// signature with it: none leaves once postern lock has returned.
	if err == nil {
		err = c.srv.Keys.stillOpen(locks)
	}
	switch {
	case errors.Is(err, errTouchTimeout):
		return refuse(audit.ReasonTouchTimeout, err.Error())
	case errors.Is(err, ErrLocked):
		return refuse(audit.ReasonVaultLocked, "the agent was locked after the decision")
	case errors.Is(err, ErrRemovedWhileSigning):
		return refuse(audit.ReasonKeyNotHeld, "the key was removed while its device signed")
	case errors.Is(err, ErrNotFound):
		// Wiped (ssh-add -d or -D, SIGUSR1, the end of its lifetime)
		// while its decision waited for a person.
		return refuse(audit.ReasonKeyNotHeld, "the key went while its decision waited")
	case err != nil:
		return refuse(audit.ReasonSigningFailed, err.Error())
	case recorded != nil:
		return nil, c.refuse("refused to sign", "key", req.Key.Fingerprint, "reason", audit.ReasonAuditFailed, "mode", d.Mode)
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
// a bound connection whose hops they permit (dest, the key's).
//
// On a forwarded connection, a userauth request for another session is
// a hop beyond the last binding that did not bind (OpenSSH before 8.9,
// a client of x/crypto/ssh, paramiko or libssh): ssh-agent signs it with
// a key not restricted to destinations, and so does postern, as a login
// to a destination it did not verify (sign sets no Dest). A connection
// bound for authentication has no hop beyond.
func (c *conn) checkBinding(dest []DestConstraint, sd *signData) error {
	last := c.binds.last()
	if sd.kind == signUserauth && last != nil {
		switch {
		case bytes.Equal(sd.sessionID, last.SessionID):
			if sd.hostKey != nil && !bytes.Equal(sd.hostKey.Marshal(), last.HostKey.Marshal()) {
				return errors.New("host key in the userauth request differs from the bound host key")
			}
		case !last.Forwarding || len(dest) != 0:
			return errors.New("userauth session id does not match the connection's session-bind")
		}
	}
	if len(dest) == 0 {
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
	return permitted(dest, c.binds.list, &sd.user)
}
