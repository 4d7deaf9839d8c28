package sshagent

// A lock asked for (postern lock, ssh-add -x, SIGUSR1, the gateway's
// stop) stops the keys at once, and may then wait for an unlock under
// way, which began before it (the gateway seals its audit anchor first).
// That unlock must not open the keyring once the lock was asked for:
// the keyring counts the locks asked for with the lock itself, under its
// own lock, and an unlock opens it only if none came since it began.

// Lock locks the keyring and counts a lock asked for, whether the
// keyring was locked already or not.
func (k *Keyring) Lock() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.asks++
	if !k.locked {
		k.locks++
	}
	k.locked = true
}

// LockAsks returns how many locks were asked for (Lock), for
// UnlockSince.
func (k *Keyring) LockAsks() uint64 {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.asks
}

// UnlockSince unlocks the keyring unless a lock was asked for since
// LockAsks returned asks, and reports whether it did.
func (k *Keyring) UnlockSince(asks uint64) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.asks != asks {
		return false
	}
	k.locked = false
	return true
}
