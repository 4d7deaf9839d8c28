package sshagent

// An add that waits (a token's login, through ssh-pkcs11-helper) may
// end after the keyring was wiped (SIGUSR1, or the person's ssh-add -D).
// OpenSSH's agent answers such a request before it removes every key, so
// its keys go with the rest; here the add is refused: the wipe would
// have removed its keys had it ended first.

import "errors"

// ErrWiped refuses an add that began before the keyring was wiped.
var ErrWiped = errors.New("every key was removed (ssh-add -D, SIGUSR1) while the key was being added")

// Wipes returns how many times the keyring was wiped (every added key
// went), for AddSince.
func (k *Keyring) Wipes() uint64 {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.wipes
}

// AddSince is AddRecorded for an add that began when the keyring had
// been wiped wipes times (Wipes): after another wipe it is refused
// (ErrWiped), as the wipe would have removed it had it come first.
func (k *Keyring) AddSince(wipes uint64, id *Identity, record func() error) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.wipes != wipes {
		id.destroy()
		return ErrWiped
	}
	return k.addLocked(id, record)
}
