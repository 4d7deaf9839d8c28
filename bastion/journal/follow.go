package journal

import (
	"context"
	"sync"
)

// FollowBuffer is how many changes a Follow stream holds for a slow
// reader. A reader that falls further behind has its stream closed, so
// that it never misses changes silently: follow again, and List to catch
// up.
const FollowBuffer = 256

// Follow streams every entry as it is after each change committed from
// now on (Start, Dispatched, End, MarkUnknown, Resolve, and the entries a
// retry marks), in commit order. The channel closes when ctx is done, when
// the journal closes or is found damaged (DamageSoFar), or when the
// reader falls more than FollowBuffer changes behind. Only the process that holds the journal sees changes: on
// a read-only journal the channel is closed at once.
func (j *Journal) Follow(ctx context.Context) <-chan *Entry {
	f := &follower{ch: make(chan *Entry, FollowBuffer), stop: make(chan struct{})}
	j.mu.RLock()
	closed := j.closed || j.readOnly || j.DamageSoFar() != nil
	if !closed {
		j.followers.add(f)
	}
	j.mu.RUnlock()
	if closed {
		close(f.ch)
		return f.ch
	}
	if j.DamageSoFar() != nil {
		// Found damaged as it was added, after noteDamage ended the
		// streams there were.
		j.followers.remove(f)
		return f.ch
	}
	go func() {
		select {
		case <-ctx.Done():
			j.followers.remove(f)
		case <-f.stop:
		}
	}()
	return f.ch
}

type follower struct {
	ch   chan *Entry
	stop chan struct{} // closed with ch
}

type followers struct {
	mu  sync.Mutex
	set map[*follower]struct{}
}

func (fs *followers) add(f *follower) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.set == nil {
		fs.set = make(map[*follower]struct{})
	}
	fs.set[f] = struct{}{}
}

func (fs *followers) remove(f *follower) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.drop(f)
}

// drop closes f's stream; fs.mu is held.
func (fs *followers) drop(f *follower) {
	if _, ok := fs.set[f]; ok {
		delete(fs.set, f)
		close(f.ch)
		close(f.stop)
	}
}

func (fs *followers) publish(e *Entry) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for f := range fs.set {
		select {
		case f.ch <- e.Clone():
		default:
			fs.drop(f)
		}
	}
}

func (fs *followers) closeAll() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for f := range fs.set {
		fs.drop(f)
	}
}
