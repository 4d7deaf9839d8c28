package vault

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/postern/postern/internal/atomicfile"
	"github.com/postern/postern/internal/sshkey"
)

// sentinel is an error value that can also match a standard library
// sentinel through errors.Is (for example ErrNotExist matches
// fs.ErrNotExist).
type sentinel struct {
	msg  string
	base error
}

func (s *sentinel) Error() string { return s.msg }
func (s *sentinel) Unwrap() error { return s.base }

// Errors reported by this package. Test for them with errors.Is; the
// returned errors carry the path and a hint on what to do.
var (
	// ErrNotExist: there is no vault at the path. Matches fs.ErrNotExist.
	ErrNotExist error = &sentinel{"vault does not exist", fs.ErrNotExist}

	// ErrExist: Create found a file (of any kind) at the path. Matches
	// fs.ErrExist.
	ErrExist error = &sentinel{"a file already exists at the vault path", fs.ErrExist}

	// ErrWrongPassphrase: the file is well formed but the passphrase does
	// not unwrap its data key. Callers should wait WrongPassphraseDelay
	// before asking again.
	ErrWrongPassphrase = errors.New("wrong passphrase")

	// ErrCorrupt: the file is damaged or was edited: bad magic, truncated,
	// a length over its limit, KDF parameters below the floor, a header
	// that does not match the wrapped key, a body that fails
	// authentication. The vault is never overwritten in this state.
	ErrCorrupt = errors.New("vault is corrupt or was tampered with")

	// ErrStaleKey: OpenWithKey was given a data key that does not open the
	// file (another vault, or the passphrase was changed since, which
	// rotates the data key). Unlock with the passphrase instead.
	ErrStaleKey = errors.New("data key does not open this vault")

	// ErrModified: Save found that the file on disk is no longer the one
	// this Vault read or last wrote (another writer changed, replaced or
	// removed it). Open the vault again and redo the change.
	ErrModified = errors.New("vault changed on disk since it was opened")

	// ErrWiped: the Vault was wiped and holds no secrets any more.
	ErrWiped = errors.New("vault was wiped; open it again")

	// ErrDuplicateKey: AddKey was given a key whose public key is
	// already in the vault.
	ErrDuplicateKey = errors.New("key is already in the vault")

	// ErrKeyNotFound: RemoveKey matched no key.
	ErrKeyNotFound = errors.New("no such key in the vault")

	// ErrUnsupportedKey: the key type or size is not accepted (postern
	// stores Ed25519, ECDSA P-256/P-384/P-521 and RSA of 2048 bits or
	// more).
	ErrUnsupportedKey = sshkey.ErrUnsupported

	// ErrKeyPassphrase: an imported private key file could not be
	// decrypted with the passphrase given.
	ErrKeyPassphrase = errors.New("wrong passphrase for the private key")
)

// Written reports whether err, from Save or ChangePassphrase, left the
// file written all the same: only the directory sync that makes the
// rename durable failed (a power loss may still undo it). Any other
// error left the file as it was.
func Written(err error) bool { return errors.Is(err, atomicfile.ErrNotDurable) }

// corruptError explains why a file was rejected. It matches ErrCorrupt,
// so that nothing writes over the file.
type corruptError struct {
	path   string // empty while parsing bytes with no file attached
	reason string
	hint   string // what to do; a default is used when empty
	// newer: the file is in a format a later postern writes, not
	// damaged: what it holds is kept by upgrading, not by a backup or a
	// new vault.
	newer bool
}

const defaultCorruptHint = "restore it from a backup, or move it aside and create a new vault"

func corrupt(format string, args ...any) error {
	return &corruptError{reason: fmt.Sprintf(format, args...)}
}

// newerFormat is a file of a format version (what) later than this
// build reads.
func newerFormat(what string, version, reads uint8) error {
	return &corruptError{
		reason: fmt.Sprintf("%s version %d is newer than this build reads (%d)", what, version, reads),
		hint:   "upgrade postern to read it",
		newer:  true,
	}
}

func (e *corruptError) Error() string {
	if e.newer {
		if e.path == "" {
			return "vault written by a newer postern: " + e.reason
		}
		return fmt.Sprintf("vault %s was written by a newer postern: %s; %s", e.path, e.reason, e.hint)
	}
	if e.path == "" {
		return ErrCorrupt.Error() + ": " + e.reason
	}
	hint := e.hint
	if hint == "" {
		hint = defaultCorruptHint
	}
	return fmt.Sprintf("vault %s is corrupt or was tampered with: %s; %s", e.path, e.reason, hint)
}

func (e *corruptError) Unwrap() error { return ErrCorrupt }

// withPath attaches path to a corruptError and passes other errors through.
func withPath(err error, path string) error {
	var ce *corruptError
	if errors.As(err, &ce) {
		c := *ce
		c.path = path
		return &c
	}
	return err
}

// pathError is an error with a complete message that still matches a
// sentinel through errors.Is.
type pathError struct {
	msg string
	err error
}

func (e *pathError) Error() string { return e.msg }
func (e *pathError) Unwrap() error { return e.err }

func notExist(path string) error {
	return &pathError{
		msg: fmt.Sprintf("no vault at %s", path),
		err: ErrNotExist,
	}
}

// WrongPassphraseDelay is the pause a caller should impose after the
// attempt-th consecutive wrong passphrase (attempt counts from 1): 1s, 2s,
// 4s, 8s, then 10s for every further attempt. Zero for attempt < 1.
//
// The package itself never sleeps: Open reports ErrWrongPassphrase as soon
// as the key derivation is done, and every front end (CLI unlock, control
// API, askpass) applies this one policy. The delay only slows a guesser
// that goes through postern; an attacker holding the file is slowed by
// Argon2id alone.
func WrongPassphraseDelay(attempt int) time.Duration {
	if attempt < 1 {
		return 0
	}
	if attempt > 4 {
		return 10 * time.Second
	}
	return time.Second << (attempt - 1)
}
