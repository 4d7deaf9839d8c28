// Package idletrim gives back to the system the memory a burst of work
// left behind, once the process has been quiet for a while.
//
// A Go program's heap grows until the garbage collector's goal (at least
// 4 MiB) before a collection frees anything, and what a collection frees
// stays with the process: the runtime returns it to the system only
// slowly, and keeps about the goal. A daemon that is idle most of the
// time, as an agent is between logins, would hold that much for nothing.
// Start watches the collections: after each one it looks, every quiet
// interval, whether the program still allocates, and once it has
// allocated nothing for a whole interval, and at least a minimum since
// it last trimmed, it collects and returns everything free to the system
// (debug.FreeOSMemory). What the last collection found live is no
// measure of what a trim frees: a key derivation's buffer is live at the
// collection its own allocation sets off, and garbage a moment later,
// with no collection after it. Nothing runs while the
// program does no work at all, and a program that keeps working is not
// interrupted: the trim waits for its quiet.
package idletrim

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// Trimmer watches the collections of the process and trims its memory
// when it has been quiet.
type Trimmer struct {
	quiet time.Duration
	min   uint64

	mu      sync.Mutex
	stopped bool
	timer   *time.Timer // the next look, while one is due
	allocs  uint64      // what the program had allocated at the last look
	trimmed uint64      // what it had allocated when it was last trimmed
	samples [1]metrics.Sample
	trims   int
}

// The metrics a look reads.
var sampled = [...]string{
	"/gc/heap/allocs:bytes", // allocated since the start
}

// Start watches the collections of the process: once the process has
// allocated nothing for quiet after one, and min bytes or more since the
// last trim, it trims. Stop ends it.
func Start(quiet time.Duration, min uint64) *Trimmer {
	t := &Trimmer{quiet: quiet, min: min}
	for i, name := range sampled {
		t.samples[i].Name = name
	}
	t.watchNextCollection()
	return t
}

// Stop stops watching; a trim under way finishes.
func (t *Trimmer) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	if t.timer != nil {
		t.timer.Stop()
	}
}

// Trim collects now and gives back to the system what is free: for a
// program that has just finished a burst of work it knows of, such as
// starting.
func (t *Trimmer) Trim() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.trimLocked()
}

// trimLocked trims, t.mu held throughout: Trims, asked while a trim is
// under way, waits for it and counts it. (The trim's collection runs
// collected, which waits for t.mu in the cleanups' goroutine.)
func (t *Trimmer) trimLocked() {
	debug.FreeOSMemory()
	t.trims++
	t.trimmed = t.read()[0]
}

// Trims returns how many times t trimmed, a trim under way included once
// it is over.
func (t *Trimmer) Trims() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.trims
}

// watchNextCollection arranges for collected to run after the next
// collection: a cleanup of an object nothing else references runs once a
// collection found it unreachable.
func (t *Trimmer) watchNextCollection() {
	runtime.AddCleanup(new(sentinel), (*Trimmer).collected, t)
}

// sentinel holds a pointer so that it is not a tiny allocation, which
// shares its block with others and lives as long as they do.
type sentinel struct{ _ *byte }

// collected runs after a collection: the next look is due after quiet,
// unless one is already.
func (t *Trimmer) collected() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	t.watchNextCollection()
	if t.timer != nil {
		return
	}
	t.allocs = t.read()[0]
	t.timer = time.AfterFunc(t.quiet, t.look)
}

// read samples the metrics (t.mu held).
func (t *Trimmer) read() [len(sampled)]uint64 {
	metrics.Read(t.samples[:])
	var v [len(sampled)]uint64
	for i := range t.samples {
		if t.samples[i].Value.Kind() == metrics.KindUint64 {
			v[i] = t.samples[i].Value.Uint64()
		}
	}
	return v
}

// look trims when nothing was allocated since the last look, and looks
// again after quiet otherwise.
func (t *Trimmer) look() {
	t.mu.Lock()
	if t.stopped {
		t.mu.Unlock()
		return
	}
	v := t.read()
	if v[0] != t.allocs {
		t.allocs = v[0]
		t.timer.Reset(t.quiet)
		t.mu.Unlock()
		return
	}
	t.timer = nil
	// A program that allocated less than min since the last trim has
	// nothing new worth giving back: what is free then is what the trim
	// could not return, and trimming again would collect for nothing,
	// after every collection, the trim's own included.
	if v[0]-t.trimmed >= t.min {
		// Its collection runs collected again, which finds the little
		// it allocated not worth another trim.
		t.trimLocked()
	}
	t.mu.Unlock()
}
