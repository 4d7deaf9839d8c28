package sshagent

import (
	"crypto/rand"
	"fmt"

	"golang.org/x/crypto/ssh"
)

// Locks returns how many times the keyring was locked. A decision read
// it before it was taken: a signature on that decision is made only
// while the count stays (SignSince).
func (k *Keyring) Locks() uint64 {
	_, locks := k.lockState()
	return locks
}

// SignSince signs data with the identity's key, for a decision taken
// when the keyring had been locked locks times (Locks); flags select
// RSA's SHA-2 signature algorithms, as the agent protocol defines them.
// Once the keyring was locked again, the decision signs nothing
// (ErrLocked), also when the keyring was unlocked since.
// An added key, which a lock hides and an unlock gives back, would
// otherwise sign on an answer given before the lock.
//
// A key held here signs under the keyring's lock, so that a lock or a
// removal cannot wipe it halfway. A key held by a device (a security
// key, a PKCS#11 token) may wait for a person to touch it: the keyring
// is not held meanwhile, so the agent goes on answering others and can
// be locked, and a signature that arrives after a lock is dropped, also
// when the keyring was unlocked again since, and so is one whose key
// went meanwhile (ssh-add -d or -D, SIGUSR1, the end of its lifetime):
// its removal was answered before the signature.
func (k *Keyring) SignSince(locks uint64, id *Identity, data []byte, flags uint32) (*ssh.Signature, error) {
	k.mu.RLock()
	if k.locked || k.locks != locks {
		k.mu.RUnlock()
		return nil, ErrLocked
	}
	signer := id.signer
	if signer == nil {
		// Wiped by a lock, a removal or an expiry since it was looked up.
		k.mu.RUnlock()
		return nil, ErrNotFound
	}
	if id.Provider == "" {
		defer k.mu.RUnlock()
		return signWith(signer, id.Key, data, flags)
	}
	k.mu.RUnlock()
	sig, err := signWith(signer, id.Key, data, flags)
	if err != nil {
		return nil, err
	}
	if err := k.stillHeld(id, locks); err != nil {
		return nil, err
	}
	return sig, nil
}

// stillOpen returns ErrLocked when the keyring is locked, or was locked
// since its count of locks was locks.
func (k *Keyring) stillOpen(locks uint64) error {
	if locked, n := k.lockState(); locked || n != locks {
		return ErrLocked
	}
	return nil
}

// ErrRemovedWhileSigning drops a device signature whose key was removed
// while the device signed.
var ErrRemovedWhileSigning = fmt.Errorf("%w: removed while its device signed", ErrNotFound)

// stillHeld returns ErrLocked when the keyring is locked, or was locked
// since its count of locks was locks, and ErrRemovedWhileSigning when id
// was removed (and wiped) since it was looked up.
func (k *Keyring) stillHeld(id *Identity, locks uint64) error {
	k.mu.RLock()
	defer k.mu.RUnlock()
	switch {
	case k.locked || k.locks != locks:
		return ErrLocked
	case id.signer == nil:
		return ErrRemovedWhileSigning
	}
	return nil
}

// signWith signs with signer, choosing the algorithm from flags.
func signWith(signer ssh.Signer, key ssh.PublicKey, data []byte, flags uint32) (*ssh.Signature, error) {
	// The flags choose RSA's SHA-2 algorithms; other keys ignore them,
	// as ssh-agent does.
	var algo string
	if plainKey(key).Type() == ssh.KeyAlgoRSA {
		switch {
		case flags&flagRSASHA256 != 0:
			algo = ssh.KeyAlgoRSASHA256
		case flags&flagRSASHA512 != 0:
			algo = ssh.KeyAlgoRSASHA512
		}
	}
	if algo == "" {
		return signer.Sign(rand.Reader, data)
	}
	as, ok := signer.(ssh.AlgorithmSigner)
	if !ok {
		return nil, fmt.Errorf("key type %s cannot sign with %s", key.Type(), algo)
	}
	return as.SignWithAlgorithm(rand.Reader, data, algo)
}
