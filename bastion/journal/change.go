package journal

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Start records that a command is about to be sent upstream. Call it
// before sending anything: when Start fails, do not send the command.
//
// Start fills in e: ID (when empty), Instance, Started and, when empty,
// CommandSHA256 (when set, it must match Command). Kind, Target (user,
// host, port 1-65535) and Command (at most MaxCommand bytes) are required;
// End, Unknown, Resolutions, RetriedBy and Dispatched must be empty.
// Descriptive text longer than MaxText is cut. When Start fails, nothing
// is stored, though e may have its ID and times filled in.
//
// Start refuses, with an *UnresolvedError, a command identical (verified
// host key, user, kind and command bytes; not the host's name or port) to
// one whose outcome is
// unknown and unresolved.
// Once a person approves retrying it, Start again with RetryOf set to the
// ID the error named: that entry, and any older unresolved ones for the
// same command, get RetriedBy set to the new entry, so the approval is
// used once. A retry that runs nothing (rejected, failed to start, or
// resolved not_started) leaves them guarding again, as before it.
// RetryOf must name the most recent such entry, or an identical
// RETRY_SAFE one; an entry that has since completed is refused, as the
// approval was given without knowing that it ran.
func (j *Journal) Start(e *Entry) error {
	if err := j.prepareStart(e); err != nil {
		return err
	}
	saved, err := j.do(func(tx *bolt.Tx) ([]*Entry, error) {
		if tx.Bucket(bucketEntries).Get([]byte(e.ID)) != nil {
			return nil, fmt.Errorf("cannot start entry %s: the id is already in the journal", e.ID)
		}
		blocking, err := unresolved(tx, e.Target, e.Kind, e.CommandSHA256)
		if err != nil {
			return nil, err
		}
		n := e.Clone()
		if n.RetryOf == "" {
			if len(blocking) > 0 {
				return nil, &UnresolvedError{Entry: blocking[len(blocking)-1]}
			}
			return []*Entry{n}, nil
		}
		prev, err := load(tx, n.RetryOf)
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(guardKey(prev.Target, prev.Kind, prev.CommandSHA256), guardKey(n.Target, n.Kind, n.CommandSHA256)) {
			return nil, fmt.Errorf("cannot start a retry of %s: that entry is %s %q on %s, not the same command and target", prev.ID, prev.Kind, prev.CommandText(), prev.Target)
		}
		if r, err := retriedBy(tx, prev); err != nil {
			return nil, err
		} else if r != nil {
			return nil, transitionf("cannot start a retry of %s: it was already retried as %s; an approval covers one retry", prev.ID, r.ID)
		}
		switch prev.Status() {
		case StatusUnknown:
			if len(blocking) == 0 {
				blocking = []*Entry{prev}
			}
			if last := blocking[len(blocking)-1]; last.ID != prev.ID {
				return nil, &UnresolvedError{Entry: last}
			}
		case StatusRetrySafe:
			if len(blocking) > 0 {
				return nil, &UnresolvedError{Entry: blocking[len(blocking)-1]}
			}
			blocking = append(blocking, prev)
		case StatusCompleted:
			return nil, transitionf("cannot start a retry of %s: it has since completed (%s); running it again needs a new approval", prev.ID, prev.Describe())
		default:
			return nil, transitionf("cannot start a retry of %s: it is still running", prev.ID)
		}
		changed := []*Entry{n}
		for _, b := range blocking {
			b.RetriedBy = n.ID
			changed = append(changed, b)
		}
		return changed, nil
	})
	if err != nil {
		return err
	}
	*e = *saved
	return nil
}

func (j *Journal) prepareStart(e *Entry) error {
	switch {
	case e.ID == "":
		e.ID = j.ids.next(time.Now())
	case !ValidID(e.ID):
		return fmt.Errorf("cannot start a journal entry: %q is not a journal id (use NewID, or leave it empty)", e.ID)
	default:
		j.ids.after(e.ID)
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("cannot start journal entry %s: "+format, append([]any{e.ID}, args...)...)
	}
	switch {
	case e.End != nil || e.Unknown != nil || len(e.Resolutions) > 0 || e.RetriedBy != "" || !e.Dispatched.IsZero():
		return fail("a new entry has no outcome, resolution, retry or dispatch time yet")
	case e.Kind != KindExec && e.Kind != KindShell && e.Kind != KindSubsystem:
		return fail("kind %q is not exec, shell or subsystem", e.Kind)
	case e.Target.User == "" || e.Target.Host == "" || e.Target.Port < 1 || e.Target.Port > 65535:
		return fail("target %q needs a user, a host and a port from 1 to 65535", e.Target)
	case len(e.Command) > MaxCommand:
		return fail("the command is %d bytes, more than the %d the journal holds; it must not run unjournaled", len(e.Command), MaxCommand)
	case e.RetryOf != "" && !ValidID(e.RetryOf):
		return fail("retry_of %q is not a journal id", e.RetryOf)
	}
	sum := CommandHash(e.Command)
	if e.CommandSHA256 == "" {
		e.CommandSHA256 = sum
	} else if e.CommandSHA256 != sum {
		return fail("command_sha256 does not match the command")
	}
	e.Instance = j.instance
	e.Started = j.now().UTC()
	e.BootID = clip(e.BootID, MaxText)
	e.Run = clip(e.Run, MaxText)
	e.Conn = clip(e.Conn, MaxText)
	e.Requester = clip(e.Requester, MaxText)
	e.Approval = clip(e.Approval, MaxText)
	e.Target.HostKey = clip(e.Target.HostKey, MaxText)
	if len(e.Target.User) > MaxText || len(e.Target.Host) > MaxText {
		return fail("the target's user or host is longer than %d bytes", MaxText)
	}
	if e.RequesterPID < 0 {
		return fail("negative requester pid")
	}
	return nil
}

// Dispatched records that the upstream accepted the request (its reply to
// exec, shell or subsystem was success). From here on, a lost outcome can
// no longer be shown to be harmless.
func (j *Journal) Dispatched(id string) (*Entry, error) {
	at := j.now().UTC()
	return j.change(id, "mark dispatched", func(e *Entry) error {
		if err := j.running(e); err != nil {
			return err
		}
		if !e.Dispatched.IsZero() {
			return transitionf("entry %s was already marked dispatched at %s", e.ID, e.Dispatched.Format("15:04:05.000"))
		}
		e.Dispatched = at
		return nil
	})
}

// End records an observed outcome. Call it before telling the client.
// At defaults to now; OutputTail keeps its last MaxOutputTail bytes. The
// outcomes rejected, denied and failed_to_start say that nothing ran: they
// are refused for a request the upstream had accepted.
func (j *Journal) End(id string, end End) (*Entry, error) {
	if end.At.IsZero() {
		end.At = j.now()
	}
	end.At = end.At.UTC()
	end.OutputTail = cloneBytes(tail(end.OutputTail, MaxOutputTail))
	end.ErrorMsg = clip(end.ErrorMsg, MaxText)
	end.Signal = clip(end.Signal, 64)
	return j.change(id, "end", func(e *Entry) error {
		if err := j.running(e); err != nil {
			if e.Unknown != nil {
				return transitionf("entry %s is already unknown (%s): record what was found out later with Resolve", e.ID, e.Unknown.Reason)
			}
			return err
		}
		if err := end.validate(e); err != nil {
			return err
		}
		e.End = &end
		return nil
	})
}

// MarkUnknown records that the outcome cannot be observed. Call it before
// telling the client. At defaults to now; LastPhase is set from whether
// the request was dispatched (a value given is ignored).
func (j *Journal) MarkUnknown(id string, u Unknown) (*Entry, error) {
	if u.At.IsZero() {
		u.At = j.now()
	}
	u.At = u.At.UTC()
	u.Detail = clip(u.Detail, MaxText)
	return j.change(id, "mark unknown", func(e *Entry) error {
		if err := j.running(e); err != nil {
			return err
		}
		u.LastPhase = phase(e)
		if err := u.validate(); err != nil {
			return err
		}
		e.Unknown = &u
		return nil
	})
}

// Resolve adds what a person or a probe found out about an entry whose
// outcome is unknown. Resolutions are kept, oldest first; the last one
// decides the status. A probe can only resolve an entry that ran with
// remote markers. id is the entry's id or a prefix of it, as Get takes.
// At defaults to now; longer Evidence is cut at MaxEvidence.
func (j *Journal) Resolve(id string, r Resolution) (*Entry, error) {
	r = j.resolution(r)
	if err := r.validate(); err != nil {
		return nil, fmt.Errorf("cannot resolve journal entry %s: %v", id, err)
	}
	return j.change(id, "resolve", func(e *Entry) error {
		if err := resolvable(e, r.By); err != nil {
			return err
		}
		e.Resolutions = append(e.Resolutions, r)
		return nil
	})
}

// CheckResolve returns the error Resolve would return for resolving e,
// an entry as Get read it, with r, short of writing it: for a caller that
// must do something first (record the resolution) and resolve only then.
func (j *Journal) CheckResolve(e *Entry, r Resolution) error {
	r = j.resolution(r)
	if err := r.validate(); err != nil {
		return fmt.Errorf("cannot resolve journal entry %s: %v", e.ID, err)
	}
	return resolvable(e, r.By)
}

// resolution is r as Resolve records it.
func (j *Journal) resolution(r Resolution) Resolution {
	if r.At.IsZero() {
		r.At = j.now()
	}
	r.At = r.At.UTC()
	r.Evidence = clip(r.Evidence, MaxEvidence)
	if r.ExitStatus != nil {
		s := *r.ExitStatus
		r.ExitStatus = &s
	}
	return r
}

// resolvable refuses a resolution (by a user or a probe) of e, an entry
// whose outcome is not unknown, or that can take no more.
func resolvable(e *Entry, by string) error {
	switch {
	case e.End != nil && !e.Lost():
		return transitionf("entry %s has an observed outcome (%s): there is nothing to resolve", e.ID, e.Describe())
	case !e.Lost():
		return transitionf("entry %s is still running in this bastion: it can be resolved only once its outcome is unknown", e.ID)
	case by == ByProbe && !e.Marker:
		return transitionf("entry %s ran without remote markers: a probe cannot tell what happened; resolve it as a user, with what you checked", e.ID)
	case len(e.Resolutions) >= MaxResolutions:
		return transitionf("entry %s already has %d resolutions", e.ID, MaxResolutions)
	}
	return nil
}

// running refuses changes to an entry that already has an outcome, or that
// another bastion instance started.
func (j *Journal) running(e *Entry) error {
	switch {
	case e.End != nil:
		return transitionf("entry %s already ended (%s): an entry ends once", e.ID, e.Describe())
	case e.Unknown != nil:
		return transitionf("entry %s is already unknown (%s)", e.ID, e.Unknown.Reason)
	case e.Instance != j.instance:
		return transitionf("entry %s belongs to bastion instance %s, not this one (%s)", e.ID, e.Instance, j.instance)
	}
	return nil
}

// change loads the entry id names (lookup: its id, or a prefix a person
// typed), applies fn and stores it.
func (j *Journal) change(id, what string, fn func(e *Entry) error) (*Entry, error) {
	e, err := j.do(func(tx *bolt.Tx) ([]*Entry, error) {
		e, err := lookup(tx, id)
		if err != nil {
			return nil, err
		}
		if err := fn(e); err != nil {
			return nil, err
		}
		return []*Entry{e}, nil
	})
	if err != nil && !errors.Is(err, ErrTransition) && !errors.Is(err, ErrDamaged) && !errors.Is(err, ErrNotFound) {
		err = fmt.Errorf("cannot %s journal entry %s: %w", what, id, err)
	}
	return e, err
}
