package sshagent

// What an add may do to the keys already added: replace a copy of the
// same key only when the adder added it (a run never takes the person's
// key), and stay within the bounds on added keys.

import (
	"bytes"
	"errors"
	"fmt"
)

// ErrNotTheRunsKey refuses a run's add of a key the person or another
// run added.
var ErrNotTheRunsKey = errors.New("the key was added by the person or another run; a run's socket cannot replace it")

// replaceable reports whether id, added through a run's socket, may
// replace the added copy of its key: only when that run added it. A run
// that replaced the person's copy would drop its constraints (a touch)
// and make the key its own, to remove; a security key's add takes only
// its public half. The caller holds the lock.
func (k *Keyring) replaceable(id *Identity) error {
	if id.Source != Added || id.Run == "" {
		return nil
	}
	blob := id.Blob()
	for _, o := range k.ids {
		if o.Source == Added && o.Run != id.Run && bytes.Equal(o.Blob(), blob) {
			return ErrNotTheRunsKey
		}
	}
	return nil
}

// roomFor reports whether an added identity id fits within the bounds
// on added keys, the copy it replaces (one with the same key or
// certificate) aside. The caller holds the lock.
func (k *Keyring) roomFor(id *Identity) error {
	if id.Source != Added {
		return nil
	}
	listed := func(id *Identity) int { return len(id.Blob()) + len(listedComment(id.Comment)) }
	blob := id.Blob()
	var all, run, allBytes, runBytes int
	for _, o := range k.ids {
		if o.Source != Added || bytes.Equal(o.Blob(), blob) {
			continue
		}
		all, allBytes = all+1, allBytes+listed(o)
		if o.Run == id.Run {
			run, runBytes = run+1, runBytes+listed(o)
		}
	}
	n := listed(id)
	switch {
	case id.Run != "" && (run >= MaxRunKeys || runBytes+n > maxRunListing):
		return fmt.Errorf("%w: a run adds at most %d keys, %d KiB with their comments", ErrTooManyKeys, MaxRunKeys, maxRunListing>>10)
	case all >= MaxAddedKeys || allBytes+n > maxAddedListing:
		return fmt.Errorf("%w: the agent holds at most %d added keys, %d KiB with their comments", ErrTooManyKeys, MaxAddedKeys, maxAddedListing>>10)
	}
	return nil
}
