package bastion

import (
	"context"
	"errors"
	"fmt"

	gossh "golang.org/x/crypto/ssh"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/bastion/journal"
)

// upstreamFor returns the connection to the real host, dialing it for the
// first command (its authentication asks the approval decision, with this
// command on the card), and asks the decision again for later commands on
// the same client connection.
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
		return nil, &approvals.Decision{Reason: approvals.ReasonVaultLocked}, nil
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
	for _, g := range gated {
		if g.decision != nil {
			if err != nil || !g.decision.Allow {
				return nil, g.decision, nil
			}
			up := &upstream{client: client, hostKey: hk, key: g.key, dead: make(chan struct{})}
			go func() {
				up.err = client.Wait()
				close(up.dead)
			}()
			go up.keepalive(s.cfg.Keepalive, 3)
			info.up = up
			return up, g.decision, nil
		}
	}
	if err == nil {
		client.Close()
		err = errors.New("authenticated without a key")
	}
	return nil, nil, fmt.Errorf("%s: %w", info.target.Host, err)
}

// decide asks the approval decision about a command, for the requester
// behind the client connection, verified again now.
func (ss *session) decide(k Key, hostKey gossh.PublicKey, e *journal.Entry, retry, action string) approvals.Decision {
	info := ss.info
	if err := info.requester.Verify(); err != nil {
		return approvals.Decision{Reason: approvals.ReasonIdentityMismatch}
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
		Channel:   approvals.Channel{Kind: "bastion"},
		Key:       k.Info,
		Purpose:   approvals.PurposeAuth,
		Dest:      &approvals.Destination{HostKey: hostKey, User: info.target.User},
		Command:   shown,
		RetryOf:   retry,
		Action:    action,
	}
	return ss.s.cfg.Decider.Decide(context.Background(), req)
}
