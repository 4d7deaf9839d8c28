package keychain

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	dbus "github.com/keybase/dbus"
	"github.com/keybase/go-keychain/secretservice"
)

// sessionOpenTimeout bounds the wait for the Secret Service to answer.
const sessionOpenTimeout = 5 * time.Second

var (
	// mu serializes all calls: the library's prompt handling is not
	// safe for concurrent use.
	mu sync.Mutex
	// svc is one connection for the life of the process: the library
	// offers no way to close one. After a failed session it is dropped
	// and a new one made on the next call.
	svc *secretservice.SecretService
)

// userRunDir is where the D-Bus library looks for the session bus when
// $DBUS_SESSION_BUS_ADDRESS is unset (tests point it elsewhere).
var userRunDir = func() string { return filepath.Join("/run/user", strconv.Itoa(os.Getuid())) }

// busAvailable reports whether a session bus can be found the way the
// D-Bus library looks for one, short of launching a new bus (which the
// library would do by running dbus-launch).
func busAvailable() error {
	if a := os.Getenv("DBUS_SESSION_BUS_ADDRESS"); a != "" && a != "autolaunch:" {
		return nil
	}
	run := userRunDir()
	for _, name := range []string{"bus", "dbus-session"} {
		if _, err := os.Stat(filepath.Join(run, name)); err == nil {
			return nil
		}
	}
	return fmt.Errorf("%w: no D-Bus session bus ($DBUS_SESSION_BUS_ADDRESS is unset and %s/bus does not exist)", ErrUnavailable, run)
}

func attributes(id [16]byte) map[string]string {
	return map[string]string{"application": application, "postern-vault": vaultHex(id)}
}

// withSession runs fn with the service and a new encrypted session,
// holding mu, and closes the session afterwards.
func withSession(fn func(*secretservice.SecretService, *secretservice.Session) error) error {
	mu.Lock()
	defer mu.Unlock()
	s, sess, err := open()
	if err != nil {
		return err
	}
	defer s.CloseSession(sess)
	return fn(s, sess)
}

// open returns the service and a new encrypted session; the caller holds
// mu and closes the session.
func open() (*secretservice.SecretService, *secretservice.Session, error) {
	if err := busAvailable(); err != nil {
		return nil, nil, err
	}
	if svc == nil {
		s, err := secretservice.NewService()
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		svc = s
	}
	ctx, cancel := context.WithTimeout(context.Background(), sessionOpenTimeout)
	defer cancel()
	sess, err := openSession(ctx, svc)
	if err != nil {
		svc = nil
		return nil, nil, fmt.Errorf("%w: no Secret Service answers on the session bus (start gnome-keyring-daemon or another provider): %v", ErrUnavailable, err)
	}
	return svc, sess, nil
}

// Available reports whether the Secret Service and its default collection
// can be reached, or why not (wrapping ErrUnavailable).
func Available() error {
	return withSession(func(s *secretservice.SecretService, _ *secretservice.Session) error {
		if _, err := s.SearchCollection(secretservice.DefaultCollection, map[string]string{"application": application}); err != nil {
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
	return withSession(func(s *secretservice.SecretService, sess *secretservice.Session) error {
		if err := s.Unlock([]dbus.ObjectPath{secretservice.DefaultCollection}); err != nil {
			return fmt.Errorf("keychain: unlock the default collection: %w", err)
		}
		value, err := sess.NewSecret(append([]byte(nil), secret...))
		if err != nil {
			return fmt.Errorf("keychain: encrypt the secret for the session: %w", err)
		}
		props := secretservice.NewSecretProperties(label(vaultID), attributes(vaultID))
		if _, err := s.CreateItem(secretservice.DefaultCollection, props, value, secretservice.ReplaceBehaviorReplace); err != nil {
			return fmt.Errorf("keychain: store the vault key: %w", err)
		}
		return nil
	})
}

// Load returns the secret stored for the vault, or ErrNotFound. An empty
// answer is an error: the library returns one, without error, when it
// cannot decrypt what the service sent.
func Load(vaultID [16]byte) ([]byte, error) {
	var secret []byte
	err := withSession(func(s *secretservice.SecretService, sess *secretservice.Session) error {
		items, err := find(s, vaultID)
		if err != nil {
			return err
		}
		if err := s.Unlock(items[:1]); err != nil {
			return fmt.Errorf("keychain: unlock the entry: %w", err)
		}
		secret, err = s.GetSecret(items[0], *sess)
		if err != nil {
			return fmt.Errorf("keychain: read the vault key: %w", err)
		}
		if len(secret) == 0 {
			return fmt.Errorf("keychain: the entry for vault %s came back empty (damaged entry, or the session decryption failed); delete it and store the key again", vaultHex(vaultID))
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
	return withSession(func(s *secretservice.SecretService, _ *secretservice.Session) error {
		items, err := find(s, vaultID)
		if err != nil {
			return err
		}
		for _, it := range items {
			if err := s.DeleteItem(it); err != nil {
				return fmt.Errorf("keychain: delete the vault key: %w", err)
			}
		}
		return nil
	})
}

// find returns the entries stored for the vault, or ErrNotFound.
func find(s *secretservice.SecretService, vaultID [16]byte) ([]dbus.ObjectPath, error) {
	items, err := s.SearchCollection(secretservice.DefaultCollection, attributes(vaultID))
	if err != nil {
		return nil, fmt.Errorf("keychain: search: %w", err)
	}
	if len(items) == 0 {
		return nil, ErrNotFound
	}
	return items, nil
}
