package bastion

import (
	"context"
	"errors"
	"fmt"

	gossh "golang.org/x/crypto/ssh"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/bastion/journal"
)

// upstreamFor returns the connection to the real host, dialing it for the
// first command (its authentication asks the approval decision, with this
// command on the card), and asks the decision again for later commands on
// the same client connection. A refusal is a decision that does not
// allow, with no error; an error means no connection, whatever the
// decision taken (returned too, for the journal).
func (ss *session) upstreamFor(e *journal.Entry, retry string) (*upstream, *approvals.Decision, error) {
	s, info := ss.s, ss.info
	info.mu.Lock()
	defer info.mu.Unlock()
	if up := info.up; up != nil {
		select {
		case <-up.dead:
			info.up = nil
		default:
			d := ss.decide(up.key, up.hostKey, e, retry, approvals.ActionCommand)
			return up, &d, nil
		}
	}
	keys, err := s.cfg.Keys.Keys()
	if err != nil {
		return nil, &approvals.Decision{Reason: audit.ReasonVaultLocked}, nil
	}
	if len(keys) == 0 {
		return nil, nil, errors.New("the gateway holds no keys (postern unlock, or ssh-add)")
	}
	var hostKey gossh.PublicKey
	signers := make([]gossh.Signer, len(keys))
	gated := make([]*gatedSigner, len(keys))
	for i, k := range keys {
		gated[i] = &gatedSigner{key: k, keys: s.cfg.Keys, decide: func(k Key) approvals.Decision {
			return ss.decide(k, hostKey, e, retry, approvals.ActionSign)
		}}
		signers[i] = gated[i]
	}
	client, hk, err := dialUpstream(info.target, s.cfg.KnownHosts, func(k gossh.PublicKey) { hostKey = k }, signers, s.cfg.DialTimeout)
	// The keys are offered in order and a refused signature ends the
	// authentication, so the last decision taken is the one that counts:
	// the key the host let in, the refusal, or an approved signature
	// after which the host still did not let the bastion in (it asks for
	// more than a key, or the connection ended).
	var last *gatedSigner
	for _, g := range gated {
		if g.decision != nil {
			last = g
		}
	}
	switch {
	case last == nil && err == nil:
		client.Close()
		err = errors.New("authenticated without a key")
	case last == nil:
	case !last.decision.Allow:
		if err == nil {
			client.Close()
		}
		return nil, last.decision, nil
	case err != nil:
		return nil, last.decision, fmt.Errorf("%s: %w", info.target.Host, err)
	default:
		up := &upstream{client: client, hostKey: hk, key: last.key, dead: make(chan struct{})}
		go func() {
			up.err = client.Wait()
			close(up.dead)
		}()
		go up.keepalive(s.cfg.Keepalive, 3)
		info.up = up
		return up, last.decision, nil
	}
	return nil, nil, fmt.Errorf("%s: %w", info.target.Host, err)
}

// decide asks the approval decision about a command, for the requester
// behind the client connection, verified again now.
func (ss *session) decide(k Key, hostKey gossh.PublicKey, e *journal.Entry, retry string, action approvals.Action) approvals.Decision {
	info := ss.info
	if err := info.requester.Verify(); err != nil {
		return approvals.Decision{Reason: audit.ReasonIdentityMismatch}
	}
	shown := e.Command
	switch e.Kind {
	case "shell":
		shown = []byte("(interactive shell)")
	case "subsystem":
		shown = append([]byte("(subsystem) "), e.Command...)
	}
	req := &approvals.Request{
		Requester: info.requester,
		Channel:   approvals.Channel{Kind: approvals.ChannelBastion},
		Key:       k.Info,
		Purpose:   approvals.PurposeAuth,
		Dest:      &approvals.Destination{HostKey: hostKey, User: info.target.User},
		Command:   shown,
		RetryOf:   retry,
		Action:    action,
	}
	return ss.s.cfg.Decider.Decide(context.Background(), req)
}
