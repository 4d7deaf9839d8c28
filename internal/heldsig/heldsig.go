// Package heldsig acts on the signals a long-running program takes as
// requests (the gateway's SIGUSR1, which wipes every key, and its SIGHUP)
// at a moment the program chooses: before it answers the next request.
//
// The Go runtime passes a signal on through two goroutines, which a busy
// machine may run after a request that came after the signal: a client
// that ran kill -USR1 and then ssh-add -l could still be shown the keys.
// Where the program holds a signal (Hold: blocked in every thread from
// the program's first instruction), no thread takes it: it waits in the
// kernel until the program asks for it, which [Queue.Take] does before a
// request, under the lock the program acts under. A request read after
// kill returned finds the signal acted on. This is how OpenSSH's
// ssh-agent acts on the signal too: it blocks it outside its poll.
//
// A held signal is blocked in what the program starts as well, as the
// kernel hands the mask on; [Release] makes a program the gateway starts
// (the person's COMMAND, an askpass program, OpenSSH's helpers) start
// with the mask the person gave the gateway, through a short start of
// postern's own file that unblocks it ([Init]). A signal not held (on
// systems other than Linux, or in a program that did not call Hold) is
// caught through os/signal, as before: acted on before the next request
// once the runtime has passed it on.
package heldsig

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
)

// A Queue acts on signals, one at a time, as they arrive (Run) and before
// a request (Take).
type Queue struct {
	act     func(os.Signal)
	held    []syscall.Signal // as Hold holds them
	notHeld []os.Signal      // caught through os/signal

	mu     sync.Mutex     // held while a signal is taken and acted on
	acting atomic.Bool    // a caught signal is being acted on
	caught chan os.Signal // the signals not held, as os/signal passes them
}

// NewQueue returns a queue that calls act for each of sigs received; it
// catches none before Catch, and acts on none before Run or Take. Call
// it after Hold.
func NewQueue(act func(os.Signal), sigs ...syscall.Signal) *Queue {
	q := &Queue{act: act, caught: make(chan os.Signal, 8)}
	for _, s := range sigs {
		if Held(s) {
			q.held = append(q.held, s)
		} else {
			q.notHeld = append(q.notHeld, s)
		}
	}
	return q
}

// Catch starts catching the signals not held, which os/signal passes on
// from here, until stop; until Run, they wait in the queue. Held ones
// wait in the kernel and need no call.
func (q *Queue) Catch() (stop func()) {
	if len(q.notHeld) == 0 {
		return func() {}
	}
	signal.Notify(q.caught, q.notHeld...)
	return func() { signal.Stop(q.caught) }
}

// Run acts on each signal as it arrives until ctx is done: a held one as
// the kernel reports it pending, one caught as os/signal passes it on.
func (q *Queue) Run(ctx context.Context) {
	if len(q.held) > 0 {
		// Without a watch (no descriptor left), a held signal is
		// still taken before every request.
		if p, err := watchPending(q.held); err == nil {
			done := make(chan struct{})
			go func() {
				p.wait(q.takeHeld)
				close(done)
			}()
			defer func() { p.close(); <-done }()
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case s := <-q.caught:
			q.acting.Store(true)
			q.mu.Lock()
			q.act(s)
			q.mu.Unlock()
			q.acting.Store(false)
		}
	}
}

// Take acts on every signal received and not yet acted on, and waits for
// one Run is acting on. Call it before acting on a request. Where a
// signal is held, it asks the kernel for it each time (one system call
// that never waits, under the lock); with none held and none caught, it
// takes no lock.
func (q *Queue) Take() {
	if len(q.held) == 0 && len(q.caught) == 0 && !q.acting.Load() {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.takeHeldLocked()
	for {
		select {
		case s := <-q.caught:
			q.act(s)
		default:
			return
		}
	}
}

// takeHeld acts on the held signals pending, under the lock.
func (q *Queue) takeHeld() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.takeHeldLocked()
}

func (q *Queue) takeHeldLocked() {
	for _, s := range q.held {
		for takePending(s) {
			q.act(s)
		}
	}
}
