package journal

import (
	"fmt"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"
)

// Group commit. Every change is an op handed to one writer goroutine. The
// writer takes the first op waiting, adds every other op already queued,
// and commits them all in one bbolt transaction: one fsync for the group.
// A lone change is committed at once (no waiting for company, unlike
// bolt.DB.Batch's 10 ms window); changes that arrive while a commit is
// syncing form the next group. Each caller is answered only after the
// commit that holds its change has returned.

// op is one change. plan reads the transaction (which already holds the
// changes of earlier ops in the group), checks that the change is allowed,
// and returns the entries to store, the changed entry first. It must not
// write: a refused op leaves the group untouched.
type op struct {
	plan    func(tx *bolt.Tx) ([]*Entry, error)
	changed []*Entry
	err     error
	done    chan struct{}
}

// do runs one change through the writer and waits until it is on disk.
func (j *Journal) do(plan func(tx *bolt.Tx) ([]*Entry, error)) (*Entry, error) {
	if j.readOnly {
		return nil, ErrReadOnly
	}
	o := &op{plan: plan, done: make(chan struct{})}
	j.mu.RLock()
	if j.closed {
		j.mu.RUnlock()
		return nil, ErrClosed
	}
	j.ops <- o
	j.mu.RUnlock()
	<-o.done
	if o.err != nil {
		return nil, j.noteDamage(o.err)
	}
	return o.changed[0].Clone(), nil
}

func (j *Journal) write(maxBatch int) {
	defer close(j.done)
	// A fault on the mapped file becomes a panic, which commit turns into
	// an error for the changes of that group (see view).
	debug.SetPanicOnFault(true)
	group := make([]*op, 0, maxBatch)
	for first := range j.ops {
		group = append(group[:0], first)
	fill:
		for len(group) < maxBatch {
			select {
			case o, ok := <-j.ops:
				if !ok {
					break fill
				}
				group = append(group, o)
			default:
				break fill
			}
		}
		j.commit(group)
	}
}

func (j *Journal) commit(group []*op) {
	err := j.db.Update(func(tx *bolt.Tx) (err error) {
		defer recoverDamage(j.path, &err)
		if p := j.broken.Load(); p != nil {
			return *p
		}
		for _, o := range group {
			o.changed, o.err = nil, nil
			changed, err := o.plan(tx)
			var recs [][]byte
			for _, e := range changed {
				if err != nil {
					break
				}
				var b []byte
				b, err = EncodeEntry(e)
				recs = append(recs, b)
			}
			if err != nil {
				o.err = err
				continue
			}
			for i, e := range changed {
				if err := put(tx, e, recs[i]); err != nil {
					return err
				}
			}
			o.changed = changed
		}
		return markChecked(tx)
	})
	for _, o := range group {
		if err != nil && o.err == nil {
			o.err = fmt.Errorf("cannot write the command journal %s: %w", j.path, err)
			o.changed = nil
		}
		if o.err == nil {
			for _, e := range o.changed {
				j.followers.publish(e)
			}
		}
		close(o.done)
	}
}
