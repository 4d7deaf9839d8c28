package idletrim

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

func heapFree() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

var keep [][]byte

// burst allocates about n bytes in small objects and lets them go.
func burst(n int) {
	for i := 0; i < n/512; i++ {
		keep = append(keep, make([]byte, 512))
	}
	keep = nil
}

// waitFor waits for cond, failing the test after a minute (a loaded
// machine may be slow; nothing here is timed).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after a minute: %s", what)
		}
	}
}

// A burst of work that ends is followed by one trim, which gives back
// what the collection freed, and then by none while nothing happens.
func TestTrimsOnceQuiet(t *testing.T) {
	tr := Start(20*time.Millisecond, 1<<20)
	defer tr.Stop()
	// On a loaded machine the burst itself may pause for the quiet
	// interval, and a trim come in the middle of it or before the free
	// memory is measured: that attempt says nothing, and is made again.
	var before uint64
	for attempt := 0; ; attempt++ {
		n := tr.Trims()
		burst(32 << 20) // collected several times on the way
		runtime.GC()    // and once more, with all of it garbage
		before = heapFree()
		if tr.Trims() == n {
			break
		}
		if attempt == 10 {
			t.Fatalf("a trim came during each of %d bursts of work", attempt+1)
		}
		time.Sleep(100 * time.Millisecond) // for a trim still to come
	}
	if before < 1<<20 {
		t.Fatalf("only %d bytes free after the collection: the test frees nothing to trim", before)
	}
	n0 := tr.Trims()
	waitFor(t, "no trim after the burst", func() bool { return tr.Trims() > n0 })
	// The runtime may keep a few pages of what it could return (it
	// failed the test once in four with "under 1 MiB"): most must go.
	if free := heapFree(); free >= before/8 {
		t.Errorf("%d bytes of the heap still free and not returned after the trim, of %d", free, before)
	}
	n := tr.Trims()
	// The trim's own collection is looked at, and found not worth another.
	time.Sleep(200 * time.Millisecond)
	if got := tr.Trims(); got != n {
		t.Errorf("%d trims while nothing happened after the first %d", got-n, n)
	}
}

// Without a collection, nothing is looked at: a program that allocates
// nothing is never woken.
func TestStopEndsTheWatch(t *testing.T) {
	tr := Start(10*time.Millisecond, 1)
	tr.Stop()
	burst(16 << 20)
	runtime.GC()
	time.Sleep(100 * time.Millisecond)
	if n := tr.Trims(); n != 0 {
		t.Errorf("%d trims after Stop", n)
	}
}

var big []byte

// A large buffer live at the last collection (a key derivation's memory,
// when a collection ran during the derivation) and garbage once the work
// ends is given back all the same: what was live then says nothing of
// what is live now.
func TestTrimsWhatWasLiveAtTheLastCollection(t *testing.T) {
	big = make([]byte, 64<<20)
	for i := range big {
		big[i] = 1 // resident
	}
	tr := Start(20*time.Millisecond, 1<<20)
	defer tr.Stop()
	runtime.GC() // with big live
	big = nil
	waitFor(t, "no trim after the work", func() bool { return tr.Trims() >= 1 })
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if objects := s[0].Value.Uint64(); objects >= 32<<20 {
		t.Errorf("after the trim: %d bytes of objects", objects)
	}
}
