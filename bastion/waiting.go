package bastion

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	gossh "golang.org/x/crypto/ssh"

	"github.com/postern/postern/bastion/journal"
	"github.com/postern/postern/internal/procid"
)

// Commands only for someone waiting: a card is withdrawn when the client
// that asked goes (the decision waits with the client's context, ended
// when it closes the session or its connection, or the ssh process
// behind it exits, and with a watch of that process, which also sees it
// run another program: decide.go), and an approved command is sent only
// if its client is still there after the answer, and again once it is
// journaled and audited, just before it is sent.

// clientContext returns a context that ends with the client connection
// ctx or with the exit of the process behind it.
func clientContext(ctx context.Context, info *connInfo) (context.Context, context.CancelFunc) {
	return until(ctx, info.requester.Exited())
}

// sessionContext returns a context that ends with ctx or when the client
// closes the session (closed: its requests end). A client that closes
// the session has gone, as one that closes its connection: with
// ControlMaster, an ssh interrupted while its card waits closes its
// session on the master's connection, which stays.
func sessionContext(ctx context.Context, closed <-chan struct{}) (context.Context, context.CancelFunc) {
	return until(ctx, closed)
}

// until returns a context that ends with ctx or once done is closed
// (nil: never).
func until(ctx context.Context, done <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if done != nil {
		go func() {
			select {
			case <-done:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return ctx, cancel
}

// errClientLeft refuses to send a command whose client is gone.
var errClientLeft = errors.New("the client left before the command was sent")

// stillWaiting reports whether the client is still there to receive the
// command's output: its connection open, the ssh process behind it the
// same live process.
func (ss *session) stillWaiting() error {
	if ss.ctx != nil && ss.ctx.Err() != nil {
		return errClientLeft
	}
	if err := ss.info.requester.Verify(); err != nil {
		if errors.Is(err, procid.ErrNoResources) {
			return fmt.Errorf("cannot check the client before sending the command: %w", err)
		}
		return fmt.Errorf("%w (%v)", errClientLeft, err)
	}
	return nil
}

func (ss *session) context() context.Context {
	if ss.ctx != nil {
		return ss.ctx
	}
	return context.Background()
}

// running tracks the commands this bastion started and that may still be
// running, by what makes two commands identical: the host key, login
// user, kind and command (not the port: the key says which host). The journal says whether each still is. It
// also holds the commands being decided, which are not in the journal
// yet: identical commands sent at the same moment are decided side by
// side, and each must see the others.
type running struct {
	mu       sync.Mutex
	ids      map[string][]string
	deciding map[*journal.Entry]string // a command being decided: its key
}

func runningKey(t journal.Target, kind, commandSHA256 string) string {
	return t.HostKey + "\x00" + journal.LoginUser(t.User) + "\x00" + kind + "\x00" + commandSHA256
}

// add counts e, journaled and about to be sent, as running.
func (r *running) add(e *journal.Entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ids == nil {
		r.ids = map[string][]string{}
	}
	k := runningKey(e.Target, e.Kind, e.CommandSHA256)
	r.ids[k] = append(r.ids[k], e.ID)
	delete(r.deciding, e)
}

// ended forgets e, which add counted, once its end is written: an entry
// whose end the journal could not write reads RUNNING there, and is
// kept, as the command may still run.
func (r *running) ended(j *journal.Journal, e *journal.Entry) {
	if cur, err := j.Get(e.ID); err == nil && cur.Status() == journal.StatusRunning {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k := runningKey(e.Target, e.Kind, e.CommandSHA256)
	if ids := slices.DeleteFunc(r.ids[k], func(id string) bool { return id == e.ID }); len(ids) > 0 {
		r.ids[k] = ids
	} else {
		delete(r.ids, k)
	}
}

// claim counts e as being decided, under key k, until add or done, and
// says whether another command with that key is being decided.
func (r *running) claim(e *journal.Entry, k string) (another bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.deciding == nil {
		r.deciding = map[*journal.Entry]string{}
	}
	r.deciding[e] = k
	for o, ok := range r.deciding {
		if o != e && ok == k {
			return true
		}
	}
	return false
}

// done ends e's claim, if it holds one: e was refused, or failed to start.
func (r *running) done(e *journal.Entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.deciding, e)
}

// identical returns an identical command the journal shows RUNNING, or
// nil; entries that have ended are forgotten.
func (r *running) identical(j *journal.Journal, k string) *journal.Entry {
	r.mu.Lock()
	ids := append([]string(nil), r.ids[k]...)
	r.mu.Unlock()
	var found *journal.Entry
	var live []string
	for _, id := range ids {
		e, err := j.Get(id)
		if err != nil || e.Status() != journal.StatusRunning {
			continue
		}
		live = append(live, id)
		found = e
	}
	r.mu.Lock()
	if len(live) == 0 {
		delete(r.ids, k)
	} else {
		r.ids[k] = live
	}
	r.mu.Unlock()
	return found
}

// runningIdentical is the guard's second question for e on the host
// whose key the connection verified: an identical command still running,
// or being decided now. It counts e as being decided from now on, until
// the bastion sends it (running.add) or refuses it (running.done).
func (ss *session) runningIdentical(e *journal.Entry, hostKey gossh.PublicKey) string {
	if ss.probe != "" || hostKey == nil {
		return ""
	}
	t := journal.Target{User: ss.info.target.User, HostKey: hostKeyFingerprint(hostKey)}
	k := runningKey(t, e.Kind, journal.CommandHash(e.Command))
	another := ss.s.running.claim(e, k)
	if prev := ss.s.running.identical(ss.s.cfg.Journal, k); prev != nil {
		return fmt.Sprintf("journal entry %s (RUNNING, started %s)", prev.ID, prev.Started.Local().Format("2006-01-02 15:04:05"))
	}
	if another {
		return "an identical command sent at the same moment, not yet started (waiting for its approval, or being sent)"
	}
	return ""
}
