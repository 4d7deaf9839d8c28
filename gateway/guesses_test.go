package gateway

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/vault"
)

// A program of the user that sends wrong passphrases through the agent
// socket (ssh-add -X, which any client may send) is paced, its delays
// adding up; the person's postern unlock from outside every run is paced
// apart, and does not wait behind the program's delays (up to 10 s for
// each queued attempt).
func TestAGuessingProgramDoesNotHoldUpThePersonsUnlock(t *testing.T) {
	pass := []byte("the person's passphrase")
	s, keys, _ := newVaultStateWithKey(t, pass, "k")
	s.start()
	unlockOne(t, s, keys, pass)
	if err := s.Lock(nil); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var delays []time.Duration
	asleep := make(chan struct{}, 4)
	wake := make(chan struct{})
	s.guesses.sleep = func(d time.Duration) {
		mu.Lock()
		delays = append(delays, d)
		mu.Unlock()
		asleep <- struct{}{}
		<-wake // the delay lasts until the test ends it
	}

	guesses := make(chan error, 2)
	go func() { guesses <- s.Unlock([]byte("guess 1")) }()
	<-asleep // the first guess is in its delay
	go func() { guesses <- s.Unlock([]byte("guess 2")) }()

	person := make(chan error, 1)
	go func() {
		person <- s.UnlockCommand(context.Background(), pass, true, func() error { return nil })
	}()
	select {
	case err := <-person:
		if err != nil {
			t.Fatalf("the person's unlock: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the person's unlock waited behind a wrong passphrase's delay sent through the agent socket")
	}
	if keys.Locked() {
		t.Fatal("the keyring is locked after the person's unlock")
	}

	close(wake)
	for range 2 {
		if err := <-guesses; !errors.Is(err, vault.ErrWrongPassphrase) && !errors.Is(err, errNotLocked) {
			t.Errorf("a guess: %v", err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(delays) == 0 || delays[0] != vault.WrongPassphraseDelay(1) {
		t.Errorf("the guesses' delays %v, want the first to be %v", delays, vault.WrongPassphraseDelay(1))
	}
}

// Within the other callers' lane the delays add up: a second wrong
// passphrase is not tried before the first one's delay is over, and
// waits a longer delay; the right passphrase ends the delays of both
// lanes.
func TestWrongPassphrasesInALaneWaitTheirTurn(t *testing.T) {
	var g guessLanes
	var delays []time.Duration
	g.sleep = func(d time.Duration) { delays = append(delays, d) }
	wrong := func() error { return vault.ErrWrongPassphrase }
	for range 3 {
		g.try(context.Background(), false, wrong)
	}
	g.try(context.Background(), true, wrong)
	want := []time.Duration{vault.WrongPassphraseDelay(1), vault.WrongPassphraseDelay(2), vault.WrongPassphraseDelay(3), vault.WrongPassphraseDelay(1)}
	if len(delays) != len(want) {
		t.Fatalf("delays %v, want %v", delays, want)
	}
	for i := range want {
		if delays[i] != want[i] {
			t.Fatalf("delays %v, want %v", delays, want)
		}
	}

	held := make(chan struct{})
	release := make(chan struct{})
	g.sleep = func(time.Duration) { close(held); <-release }
	go g.try(context.Background(), false, wrong)
	<-held
	tried := make(chan struct{})
	go g.try(context.Background(), false, func() error { close(tried); return nil })
	select {
	case <-tried:
		t.Fatal("a second attempt was tried during the first one's delay")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	<-tried

	g.reset()
	if n := g.failures(); n != 0 {
		t.Fatalf("%d failures count after the right passphrase", n)
	}
}

// Where the caller stands picks the lane: a postern unlock, or a vault
// change, sent from inside a run (here, by the process that prepared
// it, which a run's command may already be) is paced with the other
// callers, never in the person's lane, where its guesses would hold up
// the person's unlock.
func TestRunsUnlockPacedApart(t *testing.T) {
	g, sock := startGatewayWith(t, func(string) { initTestVault(t, []byte("the passphrase")) })
	c := api.NewClient(sock)
	ctx := context.Background()
	wrong := func(where string, person, other int64) {
		t.Helper()
		if err := c.Unlock(ctx, api.UnlockArgs{Passphrase: []byte("a guess")}); !api.HasCode(err, api.CodeWrongPassphrase) {
			t.Fatalf("a wrong passphrase to unlock %s: %v", where, err)
		}
		if _, err := c.ChangeVault(ctx, &api.VaultChange{Passphrase: []byte("a guess"), NewPassphrase: []byte("mine now")}); !api.HasCode(err, api.CodeWrongPassphrase) {
			t.Fatalf("a wrong passphrase to change the vault %s: %v", where, err)
		}
		if p, o := g.vault.guesses.person.failures.Load(), g.vault.guesses.other.failures.Load(); p != person || o != other {
			t.Fatalf("%s: %d failures in the person's lane, %d in the others', want %d and %d", where, p, o, person, other)
		}
	}
	wrong("from outside every run", 2, 0)
	if _, err := c.PrepareRun(ctx, "guesser"); err != nil {
		t.Fatal(err)
	}
	wrong("from inside a run", 2, 2)
}
