package bastion

import (
	"errors"
	"fmt"

	gossh "golang.org/x/crypto/ssh"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/bastion/journal"
	"github.com/postern/postern/internal/inventory"
	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/watchctx"
)

// upstreamFor returns the connection to the real host, dialing it for the
// first command (its authentication asks the approval decision, with this
// command on the card), and asks the decision again for later commands on
// the same client connection. A refusal is a decision that does not
// allow, with no error; an error means no connection, whatever the
// decision taken (returned too, for the journal).
//
// Each decision asks the retry guard first (retryOf), with the host key
// the connection verified.
func (ss *session) upstreamFor(e *journal.Entry) (*upstream, *approvals.Decision, error) {
	s, info := ss.s, ss.info
	info.mu.Lock()
	defer info.mu.Unlock()
	if up := info.up; up != nil {
		select {
		case <-up.dead:
			info.up = nil
		default:
			d := ss.decide(up.key, up.hostKey, e, approvals.ActionCommand)
			return up, &d, nil
		}
	}
	keys, err := s.cfg.Keys.Keys()
	if err != nil {
		return nil, &approvals.Decision{Reason: audit.ReasonVaultLocked}, nil
	}
	if len(keys) == 0 {
		return nil, nil, ErrNoKeys
	}
	var hostKey gossh.PublicKey
	signers := make([]gossh.Signer, len(keys))
	gated := make([]*gatedSigner, len(keys))
	deadline := &dialDeadline{timeout: s.cfg.DialTimeout}
	for i, k := range keys {
		gated[i] = &gatedSigner{key: k, keys: s.cfg.Keys, deadline: deadline, decide: func(k Key) approvals.Decision {
			return ss.decide(k, hostKey, e, approvals.ActionSign)
		}}
		signers[i] = gated[i]
	}
	client, hk, err := dialUpstream(info.target, s.cfg.KnownHosts, func(k gossh.PublicKey) { hostKey = k }, signers, deadline, s.cfg.RequirePQKex)
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
		s.logKex(info.target, client)
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
// behind the client connection, verified again now. It asks the retry
// guard first: when an identical command on this host key has an unknown
// outcome, e.RetryOf names it and the card shows it, with what is known
// of it (how it was lost and how far it had gone, or what was last found
// out about it).
func (ss *session) decide(k Key, hostKey gossh.PublicKey, e *journal.Entry, action approvals.Action) approvals.Decision {
	info := ss.info
	if err := info.requester.Verify(); err != nil {
		if errors.Is(err, procid.ErrNoResources) {
			return approvals.Decision{Reason: audit.ReasonOutOfResources}
		}
		ss.requesterGone = errors.Is(err, procid.ErrGone)
		return approvals.Decision{Reason: audit.ReasonIdentityMismatch}
	}
	retry := ""
	e.RetryOf = ""
	if prev, err := ss.retryOf(e, hostKey); err != nil {
		ss.s.cfg.Log.Error("bastion: the retry guard cannot read the command journal; refusing", "err", err)
		return approvals.Decision{Reason: audit.ReasonJournalFailed}
	} else if prev != nil {
		e.RetryOf = prev.ID
		retry = fmt.Sprintf("journal entry %s (%s: %s, started %s)", prev.ID, prev.Status(), prev.Describe(), prev.Started.Local().Format("2006-01-02 15:04:05"))
	}
	concurrent := ss.runningIdentical(e, hostKey)
	req := &approvals.Request{
		Requester: info.requester,
		Channel:   approvals.Channel{Kind: approvals.ChannelBastion},
		Key:       k.Info,
		Purpose:   approvals.PurposeAuth,
		Dest:      &approvals.Destination{HostKey: hostKey, User: info.target.User},
		Relay:     relayOf(e),
		Command:   e.Command,
		Terminal:  e.PTY,
		RetryOf:   retry,
		Running:   concurrent,
		Action:    action,
	}
	if retry != "" {
		req.RetryEntry = e.RetryOf
	}
	if ss.probe != "" {
		req.Relay, req.ProbeOf = approvals.RelayProbe, ss.probe
	}
	// The card is withdrawn if the client goes while it waits, or the ssh
	// process behind it exits or runs another program; a decision made at
	// once watches nothing.
	ctx, stop := watchctx.New(ss.context(), info.requester.WatchGone)
	defer stop()
	return ss.s.cfg.Decider.Decide(ctx, req)
}

// retryOf is the retry guard's question for e on the host whose key the
// connection verified: the latest identical command (same host key,
// user, kind and command) whose outcome is unknown, or nil. The name and
// port the client used for the host play no part. A probe is never
// journaled, and asks nothing.
func (ss *session) retryOf(e *journal.Entry, hostKey gossh.PublicKey) (*journal.Entry, error) {
	if ss.probe != "" || hostKey == nil {
		return nil, nil
	}
	t := journal.Target{User: ss.info.target.User, Host: ss.info.target.Host, Port: ss.info.target.Port}
	for _, fp := range hostKeyNames(hostKey) {
		t.HostKey = fp
		if prev, err := ss.s.cfg.Journal.Unresolved(t, e.Kind, journal.CommandHash(e.Command)); prev != nil || err != nil {
			return prev, err
		}
	}
	return nil, nil
}

// undecided returns the error a decision that did not allow stands for
// when it refused nothing: the gateway lacked what it needs to decide
// (descriptors or memory to check the requester against live evidence,
// the audit log, the journal). Such a command could not be started, as
// when its host cannot be reached: it is not one a policy or a person
// denied. nil for every other decision.
func undecided(d *approvals.Decision) error {
	if d == nil || d.Allow {
		return nil
	}
	switch d.Reason {
	case audit.ReasonOutOfResources:
		return fmt.Errorf("cannot check the ssh process behind the connection: %w", procid.ErrNoResources)
	case audit.ReasonAuditFailed:
		return errors.New("the audit log cannot record the decision")
	case audit.ReasonJournalFailed:
		return errors.New("the command journal cannot be read for the retry guard")
	}
	return nil
}

// hostKeyFingerprint is how the journal knows a host: by the fingerprint
// of the key its connection verified, or of the key the certificate it
// presented certifies (a certificate renewed is the same host), as the
// host inventory and ssh-keygen -l on the host name it.
func hostKeyFingerprint(k gossh.PublicKey) string {
	return gossh.FingerprintSHA256(inventory.HostKey(k))
}

// hostKeyNames are the fingerprints journal entries may know the host by:
// hostKeyFingerprint, then, for a certificate, its own (as entries
// written before hostKeyFingerprint named a certified key know it).
func hostKeyNames(k gossh.PublicKey) []string {
	names := []string{hostKeyFingerprint(k)}
	if own := gossh.FingerprintSHA256(k); own != names[0] {
		names = append(names, own)
	}
	return names
}

// relayOf is how the card names e's session: from the kind of the
// session's request, which the bastion read, never from the command.
func relayOf(e *journal.Entry) approvals.Relay {
	switch e.Kind {
	case journal.KindShell:
		return approvals.RelayShell
	case journal.KindSubsystem:
		return approvals.RelaySubsystem
	}
	return approvals.RelayExec
}
