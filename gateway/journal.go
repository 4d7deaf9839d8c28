package gateway

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/bastion"
	"github.com/postern/postern/bastion/journal"
	"github.com/postern/postern/gateway/api"
)

// The bastion's command journal as the gateway holds it. When the journal
// is damaged — found so at start, cut to nothing included, or met while
// serving — the gateway keeps the file as it is, the agent goes on
// signing, and the bastion refuses every command until a person decides
// ("postern journal new", which keeps the damaged file aside and starts
// a new journal). A new journal in its place, unasked, would drop the
// retry guards of every command whose outcome is unknown.

// journalState is the journal and the bastion serving with it, or the
// fault that makes the bastion refuse.
type journalState struct {
	mu   sync.Mutex
	path string
	j    *journal.Journal // nil while faulted at start, or after Close
	srv  *bastion.Server  // nil while faulted
	// servers are every bastion built, the current one last: a new
	// journal builds a new one, and connections to the old one run on.
	servers []*bastion.Server
	fault   *journalFault
	build   func(*journal.Journal) *bastion.Server
}

// journalFault is why the bastion refuses.
type journalFault struct {
	err     error
	since   time.Time
	damaged bool // the file is damaged: "postern journal new" applies
	// keys: the bastion's own keys (its certificate authority, host key
	// or known_hosts file) cannot be read or written; the journal was not
	// opened.
	keys bool
}

// The errors the control operations return while the bastion refuses:
// the journal is damaged (a person decides), or cannot be used otherwise,
// or the bastion's keys cannot be.
var (
	errJournalDamaged = errors.New("the command journal is damaged and kept as it is; the bastion refuses commands until a person decides")
	errJournalFault   = errors.New("the command journal cannot be used; the bastion refuses commands")
	errBastionKeys    = errors.New("the bastion's keys cannot be used; the bastion refuses commands until they are mended or moved aside (new ones are made then) and the gateway restarts")
)

func (f *journalFault) error() error {
	switch {
	case f.keys:
		return fmt.Errorf("%w: %v", errBastionKeys, f.err)
	case f.damaged:
		return fmt.Errorf("%w: %v", errJournalDamaged, f.err)
	}
	return fmt.Errorf("%w: %v", errJournalFault, f.err)
}

// bastionKeysFaulted makes the bastion refuse for err, about its keys:
// the agent goes on. The journal at path is left closed and as it is.
func (g *Gateway) bastionKeysFaulted(path string, err error) {
	g.log.Error("the bastion refuses commands: its keys cannot be used; the agent goes on", "err", err)
	g.journal.Store(&journalState{path: path, fault: &journalFault{err: err, since: time.Now(), keys: true}})
}

// openJournal opens the journal and builds the bastion on it. A journal
// another gateway holds is an error (this gateway must not start); any
// other failure is a fault, and the bastion refuses.
func (g *Gateway) openJournal(path string, build func(*journal.Journal) *bastion.Server) error {
	js := &journalState{path: path, build: build}
	j, err := journal.Open(path, g.bootID)
	switch {
	case errors.Is(err, journal.ErrBusy):
		return fmt.Errorf("command journal: %w", err)
	case err != nil:
		g.journalFaulted(js, &journalFault{err: err, since: time.Now(), damaged: errors.Is(err, journal.ErrDamaged)})
	default:
		js.j, js.srv = j, build(j)
		js.servers = append(js.servers, js.srv)
	}
	// Published whole: the control socket serves already, and a reader
	// must find the journal open or its fault, never neither.
	g.journal.Store(js)
	return nil
}

// journalFaulted records a new fault: logged, audited, shown by status.
func (g *Gateway) journalFaulted(js *journalState, f *journalFault) {
	js.mu.Lock()
	if js.fault != nil {
		js.mu.Unlock()
		return
	}
	js.fault = f
	js.mu.Unlock()
	g.log.Error("the bastion refuses commands: the command journal cannot be used; the agent goes on", "journal", js.path, "err", f.err)
	g.engine.Record(audit.Event{Type: audit.EventJournalDamaged, Detail: map[string]string{"path": js.path, "error": f.err.Error()}})
}

// bastionNow returns the bastion to hand a client to, or the fault that
// refuses it. An open journal that met damage since is faulted here.
func (g *Gateway) bastionNow() (*bastion.Server, *journalFault) {
	js := g.journal.Load()
	js.mu.Lock()
	srv, fault, j := js.srv, js.fault, js.j
	js.mu.Unlock()
	if fault == nil && j != nil {
		if err := j.DamageSoFar(); err != nil {
			g.journalFaulted(js, &journalFault{err: err, since: time.Now(), damaged: true})
			return nil, g.journalFault()
		}
	}
	if fault != nil {
		return nil, fault
	}
	return srv, nil
}

func (g *Gateway) journalFault() *journalFault {
	js := g.journal.Load()
	js.mu.Lock()
	defer js.mu.Unlock()
	return js.fault
}

// serveBastionConn hands a client of the bastion's socket to the bastion,
// or refuses it.
func (g *Gateway) serveBastionConn(c *net.UnixConn) {
	if g.bastionHeld.Load() != nil {
		bastion.Refuse(c, g.procs, g.log, g.limits.bastion, g.exhausted, errBastionHeld.Error())
		return
	}
	srv, fault := g.bastionNow()
	if fault != nil {
		bastion.Refuse(c, g.procs, g.log, g.limits.bastion, g.exhausted, fault.error().Error())
		return
	}
	srv.HandleConn(c)
}

// readableJournal returns the journal to read entries from: the open
// one, even when it met damage (reads say so themselves), or the fault.
func (g *Gateway) readableJournal() (*journal.Journal, error) {
	js := g.journal.Load()
	if js == nil {
		return nil, errNoBastion
	}
	js.mu.Lock()
	defer js.mu.Unlock()
	switch {
	case js.fault != nil:
		if js.j == nil {
			return nil, js.fault.error()
		}
	case js.j == nil:
		return nil, errors.New("the command journal is closed: the gateway is stopping")
	}
	return js.j, nil
}

// replaceJournal is a person's decision about a damaged journal: the
// damaged file is moved aside, kept for inspection, and a new journal
// starts, with the bastion serving again. It returns where the old file
// went.
func (g *Gateway) replaceJournal() (string, error) {
	js := g.journal.Load()
	if js == nil {
		return "", errNoBastion
	}
	g.bastionNow() // damage the journal met so far becomes its fault
	js.mu.Lock()
	defer js.mu.Unlock()
	// Judged under the lock: another "journal new" may have started a new
	// journal since. The journal's state, not a mistake in the request: a
	// failure.
	old := js.fault
	if old == nil {
		return "", fmt.Errorf("the command journal %s is not damaged: there is nothing to replace", js.path)
	} else if !old.damaged {
		return "", fmt.Errorf("%v: that is not damage a new journal mends; fix it and restart the gateway", old.err)
	}
	// A command records its end in the journal it started in: this one
	// stays until every command journaled in it has, its end and retry
	// guard read there (the bastion refuses new connections meanwhile).
	if js.srv != nil {
		if n := js.srv.RetireJournal(); n > 0 {
			return "", fmt.Errorf("%d command(s) started through the bastion are still running, and record their end in this journal: it is kept until they end; run it again then", n)
		}
	}
	// Recorded before it is done, as every approver's act: one the audit
	// log cannot record is not done.
	aside := journal.AsideName(js.path, time.Now())
	if err := g.engine.Record(audit.Event{Type: audit.EventJournalReplaced, Detail: map[string]string{"path": js.path, "kept_at": aside, "damage": old.err.Error()}}); err != nil {
		if js.srv != nil {
			js.srv.KeepJournal()
		}
		return "", fmt.Errorf("the audit log cannot record starting a new command journal, so the damaged one is kept as it is: %w", err)
	}
	if js.j != nil {
		js.j.Close() // no command of the bastion writes to it any more
		js.j = nil
	}
	if moved, err := journal.MoveAside(js.path, aside); !moved {
		return "", err
	}
	j, err := journal.Open(js.path, g.bootID)
	if err != nil {
		js.fault = &journalFault{err: err, since: time.Now(), damaged: errors.Is(err, journal.ErrDamaged)}
		return aside, fmt.Errorf("the damaged journal was kept at %s, but a new one could not be started: %w", aside, err)
	}
	js.j, js.srv, js.fault = j, js.build(j), nil
	js.servers = append(js.servers, js.srv)
	g.log.Warn("a new command journal was started; the damaged one is kept", "journal", js.path, "kept_at", aside)
	return aside, nil
}

// closeJournal closes the journal at shutdown.
func (g *Gateway) closeJournal() {
	js := g.journal.Load()
	if js == nil {
		return
	}
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.j != nil {
		js.j.Close()
		js.j = nil
	}
}

// journalStatus reports the journal for status.
func (g *Gateway) journalStatus() *api.BastionStatus {
	js := g.journal.Load()
	if js == nil {
		return nil
	}
	st := &api.BastionStatus{Journal: js.path}
	if _, f := g.bastionNow(); f != nil {
		st.Refusing = f.err.Error()
		st.Since = f.since.UTC().Format(time.RFC3339)
		st.Damaged = f.damaged
	} else if held := g.bastionHeld.Load(); held != nil {
		st.Refusing = errBastionHeld.Error()
		st.Since = held.UTC().Format(time.RFC3339)
	}
	return st
}
