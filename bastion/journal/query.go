package journal

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// MinPrefix is the shortest id prefix Get accepts.
const MinPrefix = 6

// Get returns the entry with the given id, or with the only id that starts
// with the given prefix (at least MinPrefix characters, any case).
func (j *Journal) Get(id string) (*Entry, error) {
	var e *Entry
	err := j.view(func(tx *bolt.Tx) (err error) {
		e, err = lookup(tx, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return j.shown(e), nil
}

// lookup reads the entry a person names: by its id, or by the only id
// that starts with the given prefix (at least MinPrefix characters, any
// case).
func lookup(tx *bolt.Tx, id string) (*Entry, error) {
	given := strings.TrimSpace(id)
	id = strings.ToUpper(given)
	if len(id) < MinPrefix {
		// As the person typed it, and with ErrNotFound: no entry is
		// looked for, and the list says which there are.
		return nil, fmt.Errorf("%w: journal id %q is too short: give at least %d characters", ErrNotFound, given, MinPrefix)
	}
	b := tx.Bucket(bucketEntries)
	if v := b.Get([]byte(id)); v != nil {
		return load(tx, id)
	}
	var matches []string
	c := b.Cursor()
	for k, _ := c.Seek([]byte(id)); k != nil && bytes.HasPrefix(k, []byte(id)); k, _ = c.Next() {
		matches = append(matches, string(k))
		if len(matches) > 5 {
			break
		}
	}
	switch len(matches) {
	case 0:
		return nil, fmt.Errorf("%w: no entry has an id starting with %s", ErrNotFound, id)
	case 1:
		return load(tx, matches[0])
	}
	return nil, fmt.Errorf("journal id %s is ambiguous (%s, …): give more characters", id, strings.Join(matches[:2], ", "))
}

// ListOptions filter List. The zero value lists everything.
type ListOptions struct {
	Status string    // a status, in full or by its first word (see ParseStatus); "" for all
	Since  time.Time // only entries started at or after Since
	Limit  int       // at most Limit entries; 0 for no limit
	// Before lists only entries older than the entry with this id (the
	// last one of a page already listed); "" starts with the newest.
	Before string
	// MaxBytes bounds the entries' size, as JSON, when it is not 0: an
	// entry that would take them past it is left for the next page (the
	// first is always listed). An entry's command is up to MaxCommand
	// bytes, shown twice, so a count alone does not bound a page.
	MaxBytes int
}

// List returns entries newest first.
func (j *Journal) List(opts ListOptions) ([]*Entry, error) {
	var out []*Entry
	err := j.Each(opts, func(e *Entry) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// Each passes entries to fn newest first, one at a time, within one read
// transaction: memory does not grow with the journal.
func (j *Journal) Each(opts ListOptions, fn func(*Entry) error) error {
	status := ""
	if opts.Status != "" {
		s, ok := ParseStatus(opts.Status)
		if !ok {
			return fmt.Errorf("unknown status %q: use RUNNING, COMPLETED, RETRY_SAFE or STATUS_UNKNOWN", opts.Status)
		}
		status = s
	}
	// IDs are made from the start time, so the scan can stop at ids well
	// before Since; the hour of slack covers clock steps between instances.
	var stop string
	if !opts.Since.IsZero() {
		stop = encodeID(uint64(max(opts.Since.Add(-time.Hour).UnixMilli(), 0)), 0, 0)
	}
	n, size := 0, 0
	// take passes the entry of record v (key k) to fn, as opts say; done
	// ends the listing.
	take := func(k, v []byte) (done bool, err error) {
		e, err := DecodeEntry(v)
		if err != nil {
			return true, damaged(j.path, fmt.Errorf("entry %q: %v", k, err))
		}
		e = j.shown(e)
		if !opts.Since.IsZero() && e.Started.Before(opts.Since) {
			return false, nil
		}
		if status != "" && e.Status() != status {
			return false, nil
		}
		if size += jsonSize(v, e); opts.MaxBytes > 0 && n > 0 && size > opts.MaxBytes {
			return true, nil
		}
		if err := fn(e); err != nil {
			return true, err
		}
		n++
		return opts.Limit > 0 && n == opts.Limit, nil
	}
	return j.view(func(tx *bolt.Tx) error {
		entries := tx.Bucket(bucketEntries)
		if ids := j.indexed(tx, status); ids != nil {
			for _, id := range ids {
				if opts.Before != "" && id >= opts.Before {
					continue
				}
				if stop != "" && id < stop {
					break
				}
				v := entries.Get([]byte(id))
				if v == nil {
					return damaged(j.path, fmt.Errorf("an index names entry %s, which is missing", id))
				}
				if done, err := take([]byte(id), v); done || err != nil {
					return err
				}
			}
			return nil
		}
		c := entries.Cursor()
		k, v := c.Last()
		if opts.Before != "" {
			k, v = c.Seek([]byte(opts.Before))
			if k == nil {
				k, v = c.Last()
			}
			for k != nil && string(k) >= opts.Before {
				k, v = c.Prev()
			}
		}
		for ; k != nil; k, v = c.Prev() {
			if stop != "" && string(k) < stop {
				break
			}
			if done, err := take(k, v); done || err != nil {
				return err
			}
		}
		return nil
	})
}

// indexed returns, newest first, the ids of the only entries that can
// have status, read from an index, so that a listing by status reads
// those and not every entry: for STATUS_UNKNOWN the retry guard's index
// of the entries whose outcome is unknown (and, on a read-only handle,
// the entries without an outcome, which it shows unknown); for RUNNING
// the entries without an outcome. nil for another status, or an index
// an older postern made and no gateway has rebuilt since: scan them all.
func (j *Journal) indexed(tx *bolt.Tx, status string) []string {
	meta, unresolved, open := tx.Bucket(bucketMeta), tx.Bucket(bucketUnresolved), tx.Bucket(bucketOpen)
	if meta == nil || unresolved == nil || open == nil || string(meta.Get(keyGuard)) != guardV4 {
		return nil
	}
	ids := []string{}
	keys := func(b *bolt.Bucket, from int) {
		b.ForEach(func(k, _ []byte) error {
			if len(k) > from {
				ids = append(ids, string(k[from:]))
			}
			return nil
		})
	}
	switch status {
	case StatusUnknown:
		keys(unresolved, guardKeyLen)
		if j.readOnly {
			keys(open, 0)
		}
	case StatusRunning:
		keys(open, 0)
	default:
		return nil
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	return slices.Compact(ids)
}

// jsonSize bounds the size of entry e, read from record rec, as JSON
// (Entry.MarshalJSON): the record's fields again, where a string's byte
// is escaped at worst to six ("\u003c"), and the command again as text.
func jsonSize(rec []byte, e *Entry) int {
	return 6*(len(rec)+len(e.Command)) + 256
}

// Unresolved is the retry guard's question: the most recent entry for the
// same verified host key (t.HostKey; the host's name, in any case, only
// when t has no key, with the port), user, kind and command hash whose outcome is
// unknown, unresolved, and not yet retried with a person's approval. It
// returns nil when there is none. Start asks the same question itself and
// refuses such a command; call Unresolved first, once the host key is
// verified, to show the earlier attempt on an approval card. On a
// read-only journal, entries shown as bastion_not_running are not
// included: they become unknown, and start blocking, when a bastion next
// opens the journal.
func (j *Journal) Unresolved(t Target, kind, commandSHA256 string) (*Entry, error) {
	var e *Entry
	err := j.view(func(tx *bolt.Tx) error {
		list, err := unresolved(tx, t, kind, commandSHA256)
		if len(list) > 0 {
			e = list[len(list)-1]
		}
		return err
	})
	return e, err
}

// unresolved returns the entries that block an identical command, oldest
// first.
func unresolved(tx *bolt.Tx, t Target, kind, commandSHA256 string) ([]*Entry, error) {
	prefix := guardKey(t, kind, commandSHA256)
	var list []*Entry
	c := tx.Bucket(bucketUnresolved).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		e, err := load(tx, string(k[len(prefix):]))
		if err != nil {
			return nil, err
		}
		if retried, err := retriedBy(tx, e); err != nil {
			return nil, err
		} else if retried == nil {
			list = append(list, e)
		}
	}
	return list, nil
}

// retriedBy returns the retry a person approved of e, an entry whose
// outcome is unknown, while it stands for e: it reached the host, or may
// have (it runs, ran, or its outcome is unknown). A retry that ran
// nothing (rejected, failed to start, found not started) used its
// approval without running the command, and e guards again: nil.
func retriedBy(tx *bolt.Tx, e *Entry) (*Entry, error) {
	if e.RetriedBy == "" {
		return nil, nil
	}
	r, err := load(tx, e.RetriedBy)
	if errors.Is(err, ErrNotFound) {
		return nil, damaged(tx.DB().Path(), fmt.Errorf("entry %s names its retry %s, which is missing", e.ID, e.RetriedBy))
	}
	if err != nil || r.Status() == StatusRetrySafe {
		return nil, err
	}
	return r, nil
}

// shown is the entry as this handle presents it. A read-only handle means
// no bastion is running, so an entry without an outcome has lost it.
func (j *Journal) shown(e *Entry) *Entry {
	if j.readOnly && e.End == nil && e.Unknown == nil {
		e.Unknown = &Unknown{
			At:        j.now().UTC(),
			Reason:    ReasonBastionNotRunning,
			Detail:    "bastion instance " + e.Instance + " is not running and recorded no outcome; its next start records bastion_restarted",
			LastPhase: phase(e),
		}
	}
	return e
}
