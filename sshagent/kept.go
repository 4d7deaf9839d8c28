package sshagent

import "fmt"

// A person's constraints on a key (ssh-add -c, ssh-add -h) hold for the
// key, not for one copy of it. The vault or the upstream agent may hold
// the same key without them; the added copy is listed and used first
// (Keyring.Add), but a client that removed it (ssh-add -d, -D), or named
// the plain key where the constrained copy is a certificate, would
// otherwise sign with another copy, unconstrained. So the keyring keeps,
// by public key, the constraints of the last added copy that carried
// any, for the gateway's life, and every copy of that key, the vault's
// and the upstream's too, is used under them.
//
// An add of the private key itself replaces them (whoever holds it can
// sign without postern), and lifts them when it carries none. A key whose
// private half is in a token or a security key (ssh-add -s, an sk- key)
// only adds to them: its adder need not hold anything. Its confirmation
// adds to the kept one, when the person asks for it; a run's binds the
// copies it added alone. Its destinations replace the kept ones when the
// person adds it (ssh-add -D, then ssh-add -h: OpenSSH's semantics), and
// when the run that set them does; a run's add changes no destinations
// it did not set: the copy is used under the person's. The destinations
// a run set bind its own copies alone, never the person's.
//
// An add that goes to the upstream agent (upstream_changes = forward) of
// a key the keyring also holds keeps its constraints the same way
// (KeepRecorded): the upstream applies them to its copy, and postern to
// its own, which is listed and used before the upstream's.

// The constraints kept are bounded, as the keys added are: a client that
// adds and removes key after key, each with constraints, would otherwise
// grow them for the gateway's life. Past the bounds, an add that would
// keep constraints for another key is refused; kept ones are never
// dropped to make room, which would lift them.
const (
	maxKeptKeys  = 4 * MaxAddedKeys
	maxKeptBytes = 4 << 20 // of their destinations (keptSize)
)

// keptConstraints are the constraints kept for a key.
type keptConstraints struct {
	confirm bool
	dest    []DestConstraint
	run     string // the run whose add set dest, "" for the person
}

// keepLocked records the constraints of id, an added identity. The caller
// holds k.mu.
func (k *Keyring) keepLocked(id *Identity) {
	key, c, ok := k.keptFor(id)
	if old, had := k.kept[key]; had {
		k.keptBytes -= keptSize(old)
	}
	if !ok {
		delete(k.kept, key)
		return
	}
	if k.kept == nil {
		k.kept = map[string]keptConstraints{}
	}
	k.kept[key] = c
	k.keptBytes += keptSize(c)
}

// keptFor returns the key under which id's constraints are kept, those
// keepLocked keeps for it, and whether there are any. The caller holds
// k.mu.
func (k *Keyring) keptFor(id *Identity) (key string, c keptConstraints, ok bool) {
	key = string(plainKey(id.Key).Marshal())
	// A run's confirmation binds its own copies alone (theirs, Identity's
	// Confirm): it does not make the person's key ask on every use.
	c = keptConstraints{confirm: id.Confirm && id.Run == "", dest: id.Dest, run: id.Run}
	if id.Provider != "" || id.sk != nil {
		old := k.kept[key]
		c.confirm = c.confirm || old.confirm
		switch {
		case len(old.dest) > 0 && id.Run != "" && id.Run != old.run:
			// Kept as they were: a restriction of the run's own would
			// lift them.
			c.dest, c.run = old.dest, old.run
		case len(c.dest) == 0:
			c.dest, c.run = old.dest, old.run
		}
	}
	return key, c, c.confirm || len(c.dest) > 0
}

// keepRoom reports whether the constraints of id, about to be added, fit
// within the bounds on kept constraints, those they replace aside. The
// caller holds k.mu.
func (k *Keyring) keepRoom(id *Identity) error {
	if id.Source != Added {
		return nil
	}
	key, c, ok := k.keptFor(id)
	if !ok {
		return nil
	}
	n, size := len(k.kept), k.keptBytes+keptSize(c)
	if old, had := k.kept[key]; had {
		size -= keptSize(old)
	} else {
		n++
	}
	if n > maxKeptKeys || size > maxKeptBytes {
		return fmt.Errorf("%w: the agent keeps the constraints of at most %d keys, %d MiB of destinations, until it stops", ErrTooManyKeys, maxKeptKeys, maxKeptBytes>>20)
	}
	return nil
}

// keptSize is what kept constraints count toward maxKeptBytes: their
// destinations' names and keys, and a little for the entry.
func keptSize(c keptConstraints) int {
	n := 64
	for _, d := range c.dest {
		for _, h := range []*Hop{&d.From, &d.To} {
			n += len(h.User) + len(h.Hostname)
			for _, hk := range h.Keys {
				n += len(hk.Key.Marshal())
			}
		}
	}
	return n
}

// Constraints returns what id is used under: its own confirmation and
// destinations, with those kept for its key (confirmation if either asks
// for it; its own destinations, else the kept ones). A copy a run added
// is used under the destinations the person set, also when the run's
// add came first: the person's ssh-add -h then restricts the key where a
// run's copy had it restricted otherwise. Destinations a run set bind
// that run's copies alone.
func (k *Keyring) Constraints(id *Identity) (confirm bool, dest []DestConstraint) {
	confirm, dest = id.Confirm, id.Dest
	k.mu.RLock()
	defer k.mu.RUnlock()
	if len(k.kept) == 0 {
		return confirm, dest
	}
	c, ok := k.kept[string(plainKey(id.Key).Marshal())]
	if !ok {
		return confirm, dest
	}
	if c.run != "" && c.run != id.Run {
		// A run's destinations bind the copies it added alone: it does
		// not take the key from the person (or another run) by
		// restricting it to a host of its choosing.
		c.dest = nil
	}
	if len(dest) == 0 || (id.Run != "" && c.run == "" && len(c.dest) > 0) {
		dest = c.dest
	}
	return confirm || c.confirm, dest
}

// KeepRecorded keeps the constraints of id, a key added to the upstream
// agent, when the keyring holds a copy of that key itself, as an add here
// keeps those of the copy it adds: the keyring's copy is listed and used
// before the upstream's, and is used under them from now on. record is
// called first, as AddRecorded calls it: an error from it keeps nothing.
// Without a copy here nothing is kept: the upstream applies the
// constraints to the only copy there is, and its own confirmation is
// not asked for twice.
func (k *Keyring) KeepRecorded(id *Identity, record func() error) error {
	k.mu.Lock()
	if findKey(k.ids, id.Key) == nil {
		k.mu.Unlock()
		return record()
	}
	defer k.mu.Unlock()
	if err := k.keepRoom(id); err != nil {
		return err
	}
	if err := record(); err != nil {
		return err
	}
	k.keepLocked(id)
	return nil
}
