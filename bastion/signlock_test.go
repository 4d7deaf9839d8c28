package bastion

import (
	"crypto/rand"
	"errors"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/approvals"
)

// relockedKeys are the gateway's keys as a lock and an unlock leave
// them: usable again, locked once more than before.
type relockedKeys struct {
	signer ssh.Signer
	locks  uint64
}

func (k *relockedKeys) Keys() ([]Key, error) { return []Key{{Public: k.signer.PublicKey()}}, nil }
func (k *relockedKeys) Locks() uint64        { return k.locks }

func (k *relockedKeys) SignSince(locks uint64, _ ssh.PublicKey, data []byte, _ string) (*ssh.Signature, error) {
	if locks != k.locks {
		return nil, errors.New("locked since")
	}
	return k.signer.Sign(rand.Reader, data)
}

// A decision the bastion waited for authorizes no signature once the
// gateway was locked meanwhile, even if it was unlocked again before
// the answer came: a key added with ssh-add, which a lock hides and an
// unlock gives back, signs nothing on it.
func TestNoUpstreamSignatureOnADecisionFromBeforeALock(t *testing.T) {
	keys := &relockedKeys{signer: newSigner(t)}
	g := &gatedSigner{key: Key{Public: keys.signer.PublicKey()}, keys: keys, decide: func(Key) approvals.Decision {
		keys.locks++ // postern lock, then postern unlock, while the card was up
		return approvals.Decision{Allow: true, Reason: "approved"}
	}}
	if sig, err := g.SignWithAlgorithm(rand.Reader, []byte("session"), ""); err == nil {
		t.Fatalf("signed (%s) on a decision made before a lock and unlock", sig.Format)
	}
}
