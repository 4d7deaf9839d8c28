package sshagent

// What the upstream agent lists: its identities, as postern shows them
// beside its own and finds the one a signature names.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/internal/procid"
)

// upstreamKeys are the identities the upstream agent listed last, to any
// client: a sign request finds its key there without a listing of its
// own (a new connection, such as each ssh login's, would otherwise pay
// for one). They only say what to forward and what the card shows; the
// upstream decides what it signs, destination restrictions included.
type upstreamKeys struct {
	mu  sync.Mutex
	ids []*Identity
}

func (k *upstreamKeys) set(ids []*Identity) {
	k.mu.Lock()
	k.ids = ids
	k.mu.Unlock()
}

// UpstreamListed returns the identities the upstream agent lists now,
// as to a client without session bindings, or, when it cannot be asked,
// those it listed last to any client (none without an upstream agent):
// what "postern check" knows of the keys only the upstream holds.
func (s *Server) UpstreamListed(ctx context.Context) []*Identity {
	if !s.Upstream.inUse() {
		return nil
	}
	c := &conn{srv: s, ctx: ctx, peer: &procid.Peer{}}
	c.log = connLog{c}
	if _, err := c.upstreamIdentities(); err != nil {
		s.Log.Warn("cannot list the upstream agent's keys; counting them as it listed them last", "err", err)
	}
	c.closeUpstream()
	s.upKeys.mu.Lock()
	defer s.upKeys.mu.Unlock()
	return slices.Clone(s.upKeys.ids)
}

// KeyComments returns the comments the agent holds key under, in every
// copy: the keyring's (Keyring.Comments) and the upstream agent's, as it
// listed them last.
func (s *Server) KeyComments(key ssh.PublicKey) []string {
	out := s.Keys.Comments(key)
	if s.Upstream.inUse() {
		s.upKeys.mu.Lock()
		for _, c := range commentsOf(s.upKeys.ids, key, time.Time{}) {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
		s.upKeys.mu.Unlock()
	}
	return out
}

func (k *upstreamKeys) find(key ssh.PublicKey) *Identity {
	k.mu.Lock()
	defer k.mu.Unlock()
	return findKey(k.ids, key)
}

// upstreamIdentities lists the upstream agent's identities.
func (c *conn) upstreamIdentities() ([]*Identity, error) {
	u := c.srv.Upstream
	resp, err := c.upstreamCall([]byte{msgRequestIdentities}, upstreamTimeout)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) && !u.silent.Swap(true) {
			c.srv.Log.Warn("the upstream agent did not answer a listing: listings go on without its keys, not waiting for it, until it answers again", "upstream", u.Socket)
		}
		return nil, err
	}
	if u.silent.Swap(false) {
		c.srv.Log.Info("the upstream agent answers again: its keys are listed", "upstream", u.Socket)
	}
	ids, err := parseIdentitiesAnswer(resp)
	if err != nil {
		c.dropUpstream()
		return nil, fmt.Errorf("upstream agent %s: %w", u.Socket, err)
	}
	c.srv.upKeys.set(ids)
	return ids, nil
}

// probeUpstream asks a silent upstream agent for its keys in the
// background, one listing at a time, so that its answer ends the
// silence; ctx ends it sooner.
func (s *Server) probeUpstream(ctx context.Context) {
	u := s.Upstream
	if !u.probing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer u.probing.Store(false)
		c := &conn{srv: s, ctx: ctx, peer: &procid.Peer{}}
		c.log = connLog{c}
		c.upstreamIdentities()
		c.closeUpstream()
	}()
}

// parseIdentitiesAnswer reads an upstream agent's IDENTITIES_ANSWER.
// A key the agent cannot parse is left out.
func parseIdentitiesAnswer(resp []byte) ([]*Identity, error) {
	var m struct {
		N    uint32
		Rest []byte `ssh:"rest"`
	}
	if len(resp) == 0 || resp[0] != msgIdentitiesAnswer || ssh.Unmarshal(resp[1:], &m) != nil || m.N > maxUpstreamKeys {
		return nil, errors.New("malformed identity list")
	}
	ids := make([]*Identity, 0, m.N)
	rest := m.Rest
	for range m.N {
		var k struct {
			Blob    []byte
			Comment string
			Rest    []byte `ssh:"rest"`
		}
		if err := ssh.Unmarshal(rest, &k); err != nil {
			return nil, errors.New("malformed identity list")
		}
		rest = k.Rest
		if pub, err := parsePublicKey(k.Blob); err == nil {
			ids = append(ids, &Identity{Key: pub, Comment: k.Comment, Source: Upstream})
		}
	}
	if len(rest) != 0 {
		return nil, errors.New("malformed identity list")
	}
	return ids, nil
}

// withUpstream appends to own the upstream's identities that own does
// not hold, as many as fit in an answer that ssh-add and ssh read
// (MaxMessage, as OpenSSH's limit). An upstream that cannot be reached
// lists nothing.
func (c *conn) withUpstream(own []*Identity) []*Identity {
	if !c.srv.Upstream.inUse() {
		return own
	}
	if c.srv.Upstream.silent.Load() {
		c.srv.probeUpstream(c.ctx)
		c.log.Debug("listing without the keys of the upstream agent, which did not answer the last listing")
		return own
	}
	ups, err := c.upstreamIdentities()
	if err != nil {
		c.log.Warn("listing without the upstream agent's keys", "err", err)
		return own
	}
	size := 1 + 4 // the answer's type and count
	for _, id := range own {
		size += listedBytes(id)
	}
	left := 0
	for _, id := range ups {
		if findKey(own, id.Key) != nil {
			continue
		}
		if n := listedBytes(id); size+n <= MaxMessage {
			size += n
			own = append(own, id)
		} else {
			left++
		}
	}
	if left > 0 {
		c.log.Warn("the upstream agent's keys do not all fit in a listing; some are left out", "left_out", left)
	}
	return own
}

// listedBytes is what id takes in an identities answer.
func listedBytes(id *Identity) int { return 4 + len(id.Blob()) + 4 + len(listedComment(id.Comment)) }

// lookupUpstream finds the upstream identity for key, among those it
// listed last, else in a new listing.
func (c *conn) lookupUpstream(key ssh.PublicKey) (*Identity, error) {
	if id := c.srv.upKeys.find(key); id != nil {
		return id, nil
	}
	ids, err := c.upstreamIdentities()
	if err != nil {
		return nil, err
	}
	if id := findKey(ids, key); id != nil {
		return id, nil
	}
	return nil, ErrNotFound
}
