package keychain

import (
	"fmt"
	"os"
	"sync"

	dbus "github.com/godbus/dbus/v5"

	"github.com/postern/postern/internal/sessionbus"
)

func attributes(id [16]byte) map[string]string {
	return map[string]string{"application": application, "postern-vault": vaultHex(id)}
}

// shared is the process's connection to the service, made on first use
// and kept. gnome-keyring-daemon (42.1) was seen to fail an assertion
// about its record of the caller ("'client' failed") and exit, in tests
// under load that opened a new connection for each of thousands of calls;
// with one connection for the process it was not seen. mu serializes all
// calls.
var shared struct {
	mu   sync.Mutex
	addr string
	s    *secrets
}

// withSession runs fn on the process's connection to the service (made
// again when it was lost or the session bus's address changed) with a
// new encrypted session, closed afterwards.
func withSession(fn func(*secrets, *session) error) error {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	addr, err := sessionbus.Address(os.Environ())
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if shared.s != nil && (shared.addr != addr || !shared.s.conn.Connected()) {
		shared.s.close()
		shared.s = nil
	}
	if shared.s == nil {
		s, err := connect(addr)
		if err != nil {
			return err
		}
		shared.addr, shared.s = addr, s
	}
	s := shared.s
	if err := s.findOwner(); err != nil {
		return err
	}
	ctx, cancel := sessionbus.CallContext()
	defer cancel()
	sess, err := s.openSession(ctx)
	if err != nil {
		// A connection that failed here is made again next time.
		s.close()
		shared.s = nil
		return fmt.Errorf("%w: the Secret Service opened no encrypted session: %v", ErrUnavailable, err)
	}
	defer s.closeSession(sess)
	return fn(s, sess)
}

// Available reports whether the Secret Service and its default collection
// can be reached, or why not (wrapping ErrUnavailable).
func Available() error {
	return withSession(func(s *secrets, _ *session) error {
		if _, err := s.search(defaultCollection, map[string]string{"application": application}); err != nil {
			return fmt.Errorf("%w: the Secret Service has no default collection: %v", ErrUnavailable, err)
		}
		return nil
	})
}

// Store saves secret for the vault, replacing any previous entry. The
// caller keeps and clears secret.
func Store(vaultID [16]byte, secret []byte) error {
	if len(secret) == 0 {
		return errEmptySecret
	}
	return withSession(func(s *secrets, sess *session) error {
		if err := s.unlock(defaultCollection); err != nil {
			return fmt.Errorf("keychain: unlock the default collection: %w", err)
		}
		sealed, err := sess.seal(secret)
		if err != nil {
			return fmt.Errorf("keychain: encrypt the secret for the session: %w", err)
		}
		if err := s.create(defaultCollection, label(vaultID), attributes(vaultID), sealed); err != nil {
			return fmt.Errorf("keychain: store the vault key: %w", err)
		}
		return nil
	})
}

// Load returns the secret stored for the vault, or ErrNotFound.
func Load(vaultID [16]byte) ([]byte, error) {
	var secret []byte
	err := withSession(func(s *secrets, sess *session) error {
		items, err := find(s, vaultID)
		if err != nil {
			return err
		}
		if err := s.unlock(items[0]); err != nil {
			return fmt.Errorf("keychain: unlock the entry: %w", err)
		}
		sealed, err := s.get(items[0], sess)
		if err != nil {
			return fmt.Errorf("keychain: read the vault key: %w", err)
		}
		if secret, err = sess.open(sealed); err != nil {
			return fmt.Errorf("keychain: read the vault key: %w", err)
		}
		if len(secret) == 0 {
			return fmt.Errorf("keychain: the entry for vault %s is empty (damaged); delete it and store the key again", vaultHex(vaultID))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return secret, nil
}

// Delete removes every entry for the vault, or returns ErrNotFound.
func Delete(vaultID [16]byte) error {
	return withSession(func(s *secrets, _ *session) error {
		items, err := find(s, vaultID)
		if err != nil {
			return err
		}
		for _, it := range items {
			if err := s.delete(it); err != nil {
				return fmt.Errorf("keychain: delete the vault key: %w", err)
			}
		}
		return nil
	})
}

// find returns the entries stored for the vault, or ErrNotFound.
func find(s *secrets, vaultID [16]byte) ([]dbus.ObjectPath, error) {
	items, err := s.search(defaultCollection, attributes(vaultID))
	if err != nil {
		return nil, fmt.Errorf("keychain: search: %w", err)
	}
	if len(items) == 0 {
		return nil, ErrNotFound
	}
	return items, nil
}
