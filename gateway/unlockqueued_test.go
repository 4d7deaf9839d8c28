package gateway

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/postern/postern/internal/vault"
)

// An unlock that waits its lane's turn behind a wrong passphrase's delay
// is not made once its caller is gone (it hung up, or its time limit
// passed, and it was told that it got no answer): it unlocked the vault
// later all the same, behind the back of a caller that said it had not.
func TestUnlockQueuedPastItsCallerIsNotMade(t *testing.T) {
	pass := []byte("the person's passphrase")
	s, keys, _ := newVaultStateWithKey(t, pass, "k")
	s.start()
	unlockOne(t, s, keys, pass)
	if err := s.Lock(nil); err != nil {
		t.Fatal(err)
	}
	asleep := make(chan struct{}, 1)
	wake := make(chan struct{})
	s.guesses.sleep = func(time.Duration) {
		asleep <- struct{}{}
		<-wake
	}
	outside := func() error { return nil }
	wrong := make(chan error, 1)
	go func() { wrong <- s.UnlockCommand(context.Background(), []byte("a typo"), true, outside) }()
	<-asleep // the wrong passphrase holds the person's lane through its delay

	ctx, cancel := context.WithCancelCause(context.Background())
	queued := make(chan error, 1)
	go func() { queued <- s.UnlockCommand(ctx, pass, true, outside) }()
	cancel(errors.New("no answer within the call's time limit"))
	close(wake)
	if err := <-wrong; !errors.Is(err, vault.ErrWrongPassphrase) {
		t.Fatalf("the wrong passphrase: %v", err)
	}
	err := <-queued
	if err == nil || !keys.Locked() {
		t.Fatalf("an unlock whose caller was gone before its turn: %v, keyring locked %v", err, keys.Locked())
	}
}
