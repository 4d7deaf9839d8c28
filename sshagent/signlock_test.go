package sshagent

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
)

// meanwhileDecider allows, and does meanwhile to the agent's keys as
// its answer comes back: what the person did while the request's card
// was up.
type meanwhileDecider struct {
	decider
	keys      *Keyring
	meanwhile func(*Keyring)
}

func (d *meanwhileDecider) Decide(ctx context.Context, r *approvals.Request) approvals.Decision {
	dec := d.decider.Decide(ctx, r)
	d.meanwhile(d.keys)
	return dec
}

// refusedAfter adds a key and asks it to sign, and meanwhile (as the
// allow comes back) does meanwhile to the keys; the signature must be
// refused, and it returns the reason the refusal was recorded with.
func refusedAfter(t *testing.T, meanwhile func(*Keyring)) audit.Reason {
	t.Helper()
	var dec *meanwhileDecider
	ts := startServerWith(t, func(s *Server) {
		dec = &meanwhileDecider{keys: s.Keys, meanwhile: meanwhile}
		dec.allow.Store(true)
		s.Decider = dec
	})
	ag, _ := ts.client(t)
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	if err := ag.Add(agent.AddedKey{PrivateKey: priv, Comment: "added"}); err != nil {
		t.Fatal(err)
	}
	list, err := ag.List()
	if err != nil || len(list) != 1 {
		t.Fatalf("list = %v, %v", list, err)
	}
	if sig, err := ag.Sign(list[0], []byte("data")); err == nil {
		t.Fatalf("signed (%s) on a decision that was made before", sig.Format)
	}
	return dec.lastRefusal()
}

// A decision made before a lock authorizes nothing after it, even once
// the agent is unlocked again: a key added with ssh-add, which a lock
// hides and an unlock gives back, does not sign on it.
func TestNoSignatureOnADecisionFromBeforeALock(t *testing.T) {
	got := refusedAfter(t, func(k *Keyring) {
		k.SetLocked(true)
		k.SetLocked(false)
	})
	if got != audit.ReasonVaultLocked {
		t.Fatalf("refusal recorded as %q, want %q", got, audit.ReasonVaultLocked)
	}
}

// A key removed while its request waited signs nothing, and the refusal
// is recorded as a key the agent no longer holds, as one removed before
// the request came, not as a signature that failed.
func TestKeyRemovedWhileItsCardWaitedIsNotHeld(t *testing.T) {
	got := refusedAfter(t, func(k *Keyring) { k.RemoveAll("") })
	if got != audit.ReasonKeyNotHeld {
		t.Fatalf("refusal recorded as %q, want %q", got, audit.ReasonKeyNotHeld)
	}
}

// enteringRecorder is a heldRecorder that also writes records as the
// gateway's audit log does for a key in memory (Enter): the key signs,
// then the agent waits for the record to be durable.
type enteringRecorder struct{ *heldRecorder }

func (r enteringRecorder) Enter(e audit.Event) func() error { return r.Start(e) }

// A lock that comes while a signature's record is being made durable
// takes the signature with it: the reply that would leave after postern
// lock returned is a refusal.
func TestNoSignatureLeavesAfterALockThatCameAsItWasRecorded(t *testing.T) {
	held := newHeldRecorder()
	rec := enteringRecorder{held}
	ts := startRecorded(t, rec, nil)
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	pub, _ := ssh.NewPublicKey(priv.Public())
	ag, _ := ts.client(t)
	if err := ag.Add(agent.AddedKey{PrivateKey: priv}); err != nil {
		t.Fatal(err)
	}
	c := ts.rawConn(t)
	c.Write(signFrame(pub, []byte("data to sign")))
	awaitWait(t, held, c, "local key")
	ts.srv.Keys.SetLocked(true)
	held.outcome <- nil
	go func() { // the refusal's record, if there is one
		<-held.waiting
		held.outcome <- nil
	}()
	if typ, body := readAnswer(t, c); typ != msgFailure {
		t.Fatalf("the agent was locked while the signature's record was made durable, and it answered %d %x", typ, body)
	}
}

// The keyring itself refuses to sign on a decision made before a lock
// and an unlock: the bastion signs its own logins through SignSince
// alone, with no later check of the agent's to catch it.
func TestSignSinceRefusesADecisionFromBeforeALock(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	id, err := NewIdentity(priv, nil, "added")
	if err != nil {
		t.Fatal(err)
	}
	k := &Keyring{}
	if err := k.Add(id); err != nil {
		t.Fatal(err)
	}
	locks := k.Locks()
	k.SetLocked(true)
	k.SetLocked(false)
	if sig, err := k.SignSince(locks, id, []byte("data"), 0); !errors.Is(err, ErrLocked) {
		t.Fatalf("signed (%v, %v) on a decision made before a lock and unlock, want ErrLocked", sig, err)
	}
	if _, err := k.SignSince(k.Locks(), id, []byte("data"), 0); err != nil {
		t.Fatalf("a decision made after the unlock: %v", err)
	}
}
