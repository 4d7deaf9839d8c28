package sshagent

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/ssh"
)

// Limits OpenSSH's ssh-agent also applies to session bindings.
const (
	maxBindings     = 16
	maxSessionIDLen = 128
)

// maxBindBytes bounds what one connection's bindings keep, their host
// keys and session ids with the messages that carried them: a client
// can make host keys of any size (a certificate of its own), and a
// connection keeps its bindings as long as it is open. A real chain of
// hops takes a few KiB.
const maxBindBytes = 64 << 10

// A Binding is one session-bind@openssh.com message the agent verified:
// the host key of an SSH connection, the connection's session identifier,
// and whether the agent connection is being forwarded through it.
//
// See [PROTOCOL.agent], section 1.
type Binding struct {
	HostKey    ssh.PublicKey
	SessionID  []byte
	Forwarding bool

	raw []byte // the extension's contents, for an upstream agent
}

type sessionBindMsg struct {
	HostKey    []byte
	SessionID  []byte
	Signature  []byte
	Forwarding bool
}

// parseSessionBind parses and verifies a session-bind@openssh.com request:
// the host key must have signed the session identifier.
func parseSessionBind(contents []byte) (Binding, error) {
	if len(contents) > maxBindBytes {
		return Binding{}, fmt.Errorf("session-bind of %d bytes (limit %d)", len(contents), maxBindBytes)
	}
	// Parsed from a copy, which the binding keeps: its host key and
	// session id refer to it, not to the request.
	raw := bytes.Clone(contents)
	var m sessionBindMsg
	if err := ssh.Unmarshal(raw, &m); err != nil {
		return Binding{}, fmt.Errorf("malformed session-bind: %w", err)
	}
	if len(m.SessionID) == 0 || len(m.SessionID) > maxSessionIDLen {
		return Binding{}, fmt.Errorf("session-bind: session id of %d bytes", len(m.SessionID))
	}
	key, err := ssh.ParsePublicKey(m.HostKey)
	if err != nil {
		return Binding{}, fmt.Errorf("session-bind: host key: %w", err)
	}
	var sig ssh.Signature
	if err := ssh.Unmarshal(m.Signature, &sig); err != nil {
		return Binding{}, fmt.Errorf("session-bind: malformed signature: %w", err)
	}
	// Only a security key's signature has fields past its blob (which
	// its check reads whole); another key's check reads the blob alone,
	// and the binding would keep whatever came after it. OpenSSH's
	// agent refuses trailing data too.
	if len(sig.Rest) != 0 && !strings.HasPrefix(key.Type(), "sk-") {
		return Binding{}, errors.New("session-bind: data after the signature")
	}
	if err := key.Verify(m.SessionID, &sig); err != nil {
		return Binding{}, fmt.Errorf("session-bind: host key %s did not sign the session id: %w", ssh.FingerprintSHA256(key), err)
	}
	return Binding{HostKey: key, SessionID: m.SessionID, Forwarding: m.Forwarding, raw: raw}, nil
}

// bindings records the session bindings of one agent connection, with
// ssh-agent's consistency rules.
type bindings struct {
	list      []Binding
	failed    bool // a bind was refused: the connection is not trusted again
	attempted bool // a bind was asked for: the connection comes through ssh
	size      int  // the bytes of the bindings' messages (maxBindBytes)
}

// add records b. A connection bound for authentication (not forwarding)
// cannot be bound again; a session id cannot be rebound to another key.
func (bs *bindings) add(b Binding) error {
	for _, old := range bs.list {
		if !old.Forwarding {
			return errors.New("session-bind: connection already bound for authentication")
		}
		sameID := bytes.Equal(old.SessionID, b.SessionID)
		sameKey := bytes.Equal(old.HostKey.Marshal(), b.HostKey.Marshal())
		switch {
		case sameID && sameKey:
			return nil
		case sameID:
			return errors.New("session-bind: session id already bound to another host key")
		}
	}
	if len(bs.list) >= maxBindings {
		return errors.New("session-bind: too many bindings on one connection")
	}
	if bs.size+len(b.raw) > maxBindBytes {
		return fmt.Errorf("session-bind: the connection's bindings would hold %d bytes (limit %d)", bs.size+len(b.raw), maxBindBytes)
	}
	bs.size += len(b.raw)
	bs.list = append(bs.list, b)
	return nil
}

// last returns the most recent binding, or nil.
func (bs *bindings) last() *Binding {
	if len(bs.list) == 0 {
		return nil
	}
	return &bs.list[len(bs.list)-1]
}

// forwarding reports whether any binding marks the connection as one that
// travels through a forwarded agent socket.
func (bs *bindings) forwarding() bool {
	for _, b := range bs.list {
		if b.Forwarding {
			return true
		}
	}
	return false
}
