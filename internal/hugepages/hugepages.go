// Package hugepages keeps transparent huge pages out of the memory of a
// program that runs for hours (the gateway, the approver's console,
// postern run and the helper of a confined run), but for the work that
// wants them.
//
// Where the kernel gives huge pages to all anonymous memory
// (/sys/kernel/mm/transparent_hugepage/enabled set to "always", the
// default of many distributions), the first fault in any 2 MiB-aligned
// stretch of it maps a whole huge page. A Go program's heap arenas and
// data touch a few KiB in several such stretches, so an idle gateway
// holds about 5 MiB more than it uses, and keeps it: what the runtime
// gives back splits a huge page, and what stays of it stays resident.
//
// Off turns them off for the process (prctl PR_SET_THP_DISABLE). Where
// the kernel gives them to all memory, the runtime has touched its memory
// by the time main runs, so Off starts the program again under the
// setting. The setting goes to every process the program starts, as the
// kernel hands it on. A program started with huge pages off already has
// the person's setting (a session that turned them off for all its
// programs), and keeps it for everything; one of postern's that starts
// another (the daemon a detaching gateway starts) hands it [ChildEnv], so
// that the other knows the setting is postern's own. [TurnOff] leaves the
// start again to its caller, which has one of its own to make for another
// setting (the gateway's held signals, package heldsig): the program then
// starts again once for both.
//
// Allow turns them on again for a stretch of work that faults in much
// fresh memory at once, or for the fork of a program that is not the
// program's own. A key derivation's 64 MiB or more, faulted in 4 KiB pages,
// costs each unlock from a tenth of a second to a second more, by the
// machine. In a process that did not call Off, or that keeps the
// person's setting, Allow changes nothing.
package hugepages

import "sync"

// state is what Allow counts: whether Off turned huge pages off, and how
// many stretches of work have them on now.
var state struct {
	mu      sync.Mutex
	off     bool
	allowed int
}

// Allow turns huge pages on for the process until restore is called,
// where Off turned them off; calls may overlap, and they stay on until the
// last restore. Restore is safe to call more than once.
func Allow() (restore func()) {
	state.mu.Lock()
	defer state.mu.Unlock()
	if !state.off {
		return func() {}
	}
	if state.allowed == 0 {
		setDisabled(false)
	}
	state.allowed++
	var once sync.Once
	return func() {
		once.Do(func() {
			state.mu.Lock()
			defer state.mu.Unlock()
			if state.allowed--; state.allowed == 0 {
				setDisabled(true)
			}
		})
	}
}

// markOff turns huge pages off for the process and records that it runs
// so, and reports whether the setting holds.
func markOff() bool {
	state.mu.Lock()
	defer state.mu.Unlock()
	state.off = setDisabled(true) == nil
	return state.off
}
