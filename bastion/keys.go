package bastion

import (
	"errors"
	"fmt"
	"io"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/approvals"
)

// A KeySource holds the keys the bastion may authenticate upstream with:
// the gateway's keyring (the vault's keys and those added with ssh-add).
type KeySource interface {
	// Keys returns the usable keys (none while the gateway is locked) with
	// their descriptions for approvals.
	Keys() ([]Key, error)
	// Locks counts the times the keys were locked, read before a
	// decision is taken.
	Locks() uint64
	// SignSince signs with key, using the signature algorithm algo (""
	// for the key's default), only while the keys have not been locked
	// since Locks returned locks: a lock voids the decisions taken
	// before it, also once the keys are unlocked again.
	SignSince(locks uint64, key ssh.PublicKey, data []byte, algo string) (*ssh.Signature, error)
}

// Key is a usable key.
type Key struct {
	Public ssh.PublicKey
	Info   approvals.Key
}

// Errors of the upstream connection and of resolving an entry.
var (
	// ErrDenied is returned by an upstream signature the approval
	// decision refused.
	ErrDenied = errors.New("denied by policy or approval")
	// ErrNoKeys: the gateway holds no key to authenticate upstream with
	// (its vault is locked or empty, and none was added with ssh-add).
	ErrNoKeys = errors.New("the gateway holds no keys")
	// ErrNoMarkers is returned by Resolve for an entry that ran without
	// remote markers: nothing on the host tells what happened, so only a
	// person who looked can resolve it (ResolveByHand).
	ErrNoMarkers = errors.New("the command ran without remote markers")
)

// gatedSigner signs upstream authentications only after the approval
// decision allows them, with the facts of the command that caused the
// connection.
type gatedSigner struct {
	key      Key
	keys     KeySource
	decide   func(key Key) approvals.Decision
	decision *approvals.Decision // the decision taken, for the journal
	deadline *dialDeadline       // lifted while the decision waits; nil: none
}

var _ ssh.MultiAlgorithmSigner = (*gatedSigner)(nil)

func (s *gatedSigner) PublicKey() ssh.PublicKey { return s.key.Public }

// Algorithms names the signature algorithms of the key itself, also for
// a certificate: x/crypto matches them against the server's list of
// signature algorithms, which names no certificate types.
func (s *gatedSigner) Algorithms() []string {
	pub := s.key.Public
	if c, ok := pub.(*ssh.Certificate); ok {
		pub = c.Key
	}
	if pub.Type() == ssh.KeyAlgoRSA {
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256}
	}
	return []string{pub.Type()}
}

func (s *gatedSigner) Sign(r io.Reader, data []byte) (*ssh.Signature, error) {
	return s.SignWithAlgorithm(r, data, "")
}

func (s *gatedSigner) SignWithAlgorithm(_ io.Reader, data []byte, algo string) (*ssh.Signature, error) {
	locks := s.keys.Locks()
	var d approvals.Decision
	if s.deadline != nil {
		s.deadline.waiting(func() { d = s.decide(s.key) })
	} else {
		d = s.decide(s.key)
	}
	s.decision = &d
	if !d.Allow {
		return nil, fmt.Errorf("%w (%s)", ErrDenied, d.Reason)
	}
	return s.keys.SignSince(locks, s.key.Public, data, algo)
}
