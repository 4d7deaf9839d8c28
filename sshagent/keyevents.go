package sshagent

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/pace"
	"github.com/postern/postern/internal/safetext"
)

// The audit events of the agent's own keys (audit.EventAgentKeyAdded and
// audit.EventAgentKeyRemoved). A key added over a socket is an authority
// change: its event is written before the key can sign, and the add is
// refused when it cannot be. A removal only takes authority away: it is
// made first and recorded after, and never waits for the log.

// A run's socket adds keys at a pace: each add is a durable record, and
// a run that added and removed keys in a loop would fill the disk with
// the audit log (and a log that cannot be written refuses the person's
// signatures too). So does a connection that came through ssh, for the
// host the agent is forwarded to, paced by the ssh that forwards it. A
// run (or that ssh) adds runAddBurst keys at once, then runAddRate a
// second; past that, an add is refused, and nothing is recorded.
const (
	runAddBurst  = 64
	runAddRate   = 1
	maxPacedRuns = 4096
)

// runAdds paces the keys runs add.
type runAdds struct {
	mu sync.Mutex
	by pace.Set[struct{}]
}

// paced reports whether the connection may add keys now: one of the
// person's sockets always may, a run's, or one that came through ssh,
// within its pace; the refusal is logged.
func (c *conn) paced() bool {
	run := c.run()
	if run == "" && c.remote() {
		run = fmt.Sprintf("through ssh %d %d", c.peer.PID, c.peer.StartTicks)
	}
	if run == "" {
		return true
	}
	p := &c.srv.runAdds
	p.mu.Lock()
	if p.by.Max == 0 {
		p.by = pace.Set[struct{}]{Burst: runAddBurst, Rate: runAddRate, Max: maxPacedRuns}
	}
	now := time.Now()
	ok := p.by.Take(p.by.Get(run, now), now)
	p.mu.Unlock()
	if !ok {
		c.refuse(fmt.Sprintf("refusing to add keys: a run, or a host through ssh, adds at most %d keys at once, then %d a second", runAddBurst, runAddRate))
	}
	return ok
}

// maxKeptField bounds each fact of a key that an event keeps, and each
// string of a line a connection logs (connLog): a client chooses a
// comment, a certificate's key id, an extension's name or a provider's
// path as long as a request (MaxMessage), and an event is at most
// audit.MaxEventSize.
const maxKeptField = 1024

// KeyEvent returns the event of id added to or removed from the agent
// (typ), with the facts it carries: its fingerprint, the run whose
// socket added it, its comment and, for an add, its constraints.
func KeyEvent(typ audit.EventType, id *Identity, reason audit.Reason) audit.Event {
	d := map[string]string{}
	set := func(k, v string) {
		if v != "" {
			d[k] = safetext.Cut(v, maxKeptField)
		}
	}
	set("comment", id.Comment)
	if id.Source != Added {
		set("key_holder", id.Source.String()) // as a sign event says it
	}
	if typ == audit.EventAgentKeyAdded {
		if id.Confirm {
			set("confirm", "yes")
		}
		if !id.Expires.IsZero() {
			set("expires", id.Expires.UTC().Format(time.RFC3339))
		}
		if len(id.Dest) > 0 {
			set("destinations", strconv.Itoa(len(id.Dest)))
		}
		set("provider", id.Provider)
		if c, ok := id.Key.(*ssh.Certificate); ok {
			set("certificate", c.KeyId)
		}
	}
	ev := audit.Event{Type: typ, Key: id.Fingerprint(), Run: id.Run, Reason: reason}
	if len(d) > 0 {
		ev.Detail = d
	}
	return ev
}

// recordKey appends ev, a change the connection asked for, with its
// client as who asked, and whether it came through a forwarded agent
// connection: a host the agent is forwarded to asked, not the client.
func (c *conn) recordKey(ev audit.Event) error {
	if c.srv.Record == nil {
		return nil
	}
	ev.Approver = c.peer.Describe()
	ev.Forwarding = c.binds.forwarding()
	return c.srv.Record(ev)
}

// recordRemoved records the removal of ids, asked for by the
// connection's client. The removal stands when its record cannot be
// written; the gateway's log says so.
func (c *conn) recordRemoved(ids []*Identity) {
	for _, id := range ids {
		if err := c.recordKey(KeyEvent(audit.EventAgentKeyRemoved, id, audit.ReasonRemoved)); err != nil {
			c.log.Error("key removed, its audit event not written", "key", id.Fingerprint(), "err", err)
		}
	}
}
