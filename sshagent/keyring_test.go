package sshagent

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// A key both in the vault and added with ssh-add is listed once, as the
// added copy (its constraints apply); ssh-add -d removes the added copy
// and leaves the vault's, in either order of adding and unlocking.
func TestAddedCopyOfAVaultKey(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	fresh := func(comment string) *Identity {
		id, err := NewIdentity(priv, nil, comment)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	for _, vaultFirst := range []bool{true, false} {
		keys := &Keyring{}
		added := fresh("added")
		added.Confirm = true
		if vaultFirst {
			keys.ReplaceVault([]*Identity{fresh("vault")})
		}
		if err := keys.Add(added); err != nil {
			t.Fatal(err)
		}
		if !vaultFirst {
			keys.ReplaceVault([]*Identity{fresh("vault")})
		}
		ids, _ := keys.Identities()
		if len(ids) != 1 || ids[0].Comment != "added" || !ids[0].Confirm {
			t.Fatalf("vault first %v: listed %d identities, first %q", vaultFirst, len(ids), ids[0].Comment)
		}
		if id, err := keys.Lookup(added.Key); err != nil || id != ids[0] {
			t.Fatalf("vault first %v: lookup gave %v %v", vaultFirst, id, err)
		}
		if _, err := keys.Remove(added.Key, ""); err != nil {
			t.Fatal(err)
		}
		ids, _ = keys.Identities()
		if len(ids) != 1 || ids[0].Comment != "vault" || ids[0].Source != Vault {
			t.Fatalf("vault first %v: after ssh-add -d, %d identities", vaultFirst, len(ids))
		}
		if _, err := keys.Remove(added.Key, ""); err == nil {
			t.Fatalf("vault first %v: ssh-add -d removed the vault copy", vaultFirst)
		}
	}
}

// Constraints a person put on an added key hold for every copy of the
// key: the vault's after the added copy was removed (ssh-add -d, -D),
// and the vault's plain key where the added copy is its certificate. An
// add of the private key without constraints lifts them; a token's copy
// (its adder holds nothing) only adds to them.
func TestConstraintsOutliveTheirCopy(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	fresh := func(comment string) *Identity {
		// A copy of the key each: a removed identity wipes its own.
		id, err := NewIdentity(slices.Clone(priv), nil, comment)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	host := newHost(t)
	dest := []DestConstraint{{To: Hop{Hostname: "a", Keys: []HopKey{{Key: host.PublicKey()}}}}}
	keys := &Keyring{}
	vault := fresh("vault")
	keys.ReplaceVault([]*Identity{vault})
	check := func(what string, wantConfirm, wantDest bool) {
		t.Helper()
		id, err := keys.Lookup(vault.Key)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		confirm, d := keys.Constraints(id)
		if confirm != wantConfirm || (len(d) > 0) != wantDest {
			t.Fatalf("%s: %q used with confirm %v and %d destinations, want %v and %v", what, id.Comment, confirm, len(d), wantConfirm, wantDest)
		}
	}
	check("the vault's key alone", false, false)

	added := fresh("added")
	added.Source, added.Confirm, added.Dest = Added, true, dest
	if err := keys.Add(added); err != nil {
		t.Fatal(err)
	}
	check("added with -c -h", true, true)
	if _, err := keys.Remove(added.Key, ""); err != nil {
		t.Fatal(err)
	}
	check("the vault's copy after ssh-add -d", true, true)

	// A token's copy without constraints lifts nothing.
	token := fresh("token")
	token.Source, token.Provider = Added, "/usr/lib/softhsm/libsofthsm2.so"
	keys.Add(token)
	keys.RemoveAll("")
	check("after a token's copy and ssh-add -D", true, true)

	// The private key added again, without constraints: lifted.
	plain := fresh("plain")
	plain.Source = Added
	keys.Add(plain)
	keys.Remove(plain.Key, "")
	check("after the private key was added without constraints", false, false)

	// A certificate of the key added with -c: the plain key, which the
	// vault holds, is used under it too.
	cert := fresh("cert")
	cert.Source, cert.Confirm = Added, true
	cert.Key = newCert(t, vault.Key, ssh.UserCert, time.Now().Add(time.Hour))
	if err := keys.Add(cert); err != nil {
		t.Fatal(err)
	}
	check("the plain key beside a certificate added with -c", true, false)
}

// A run removes a token's keys (ssh-add -e) only where it added them all.
func TestRemoveProviderByRun(t *testing.T) {
	keys := &Keyring{}
	for _, run := range []string{"", "R1"} {
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		id, err := NewIdentity(priv, nil, "token key")
		if err != nil {
			t.Fatal(err)
		}
		id.Source, id.Provider, id.Run = Added, "/lib/p"+run+".so", run
		if err := keys.Add(id); err != nil {
			t.Fatal(err)
		}
	}
	if gone, err := keys.RemoveProvider("/lib/p.so", "R1"); err != ErrOtherRun || len(gone) != 0 || !keys.HoldsProvider("/lib/p.so") {
		t.Fatalf("a run removed the person's token keys: %d %v", len(gone), err)
	}
	if gone, err := keys.RemoveProvider("/lib/pR1.so", "R2"); err != ErrOtherRun || len(gone) != 0 {
		t.Fatalf("a run removed another run's token keys: %d %v", len(gone), err)
	}
	if gone, err := keys.RemoveProvider("/lib/pR1.so", "R1"); err != nil || len(gone) != 1 {
		t.Fatalf("a run could not remove the token keys it added: %d %v", len(gone), err)
	}
	if gone, err := keys.RemoveProvider("/lib/p.so", ""); err != nil || len(gone) != 1 {
		t.Fatalf("the person could not remove token keys: %d %v", len(gone), err)
	}
}

// Added keys are bounded: a run's socket adds at most MaxRunKeys, and
// only so many bytes of keys and comments, so that the gated program
// fills neither the gateway's memory nor the person's listings; every
// socket together adds at most MaxAddedKeys. Adding a key held already
// replaces it and takes no room.
func TestAddedKeysBounded(t *testing.T) {
	keys := &Keyring{}
	add := func(run, comment string) (*Identity, error) {
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		id, err := NewIdentity(priv, nil, comment)
		if err != nil {
			t.Fatal(err)
		}
		id.Run = run
		return id, keys.Add(id)
	}
	var first *Identity
	for i := range MaxRunKeys {
		id, err := add("R1", "")
		if err != nil {
			t.Fatalf("the run's key %d: %v", i+1, err)
		}
		if first == nil {
			first = id
		}
	}
	if _, err := add("R1", ""); !errors.Is(err, ErrTooManyKeys) {
		t.Fatalf("a run's key past the bound: %v", err)
	}
	again, _ := NewIdentity(first.priv, nil, "again")
	again.Run = "R1"
	if err := keys.Add(again); err != nil {
		t.Fatalf("a run adding a key it holds again: %v", err)
	}
	if _, err := add("R2", strings.Repeat("c", maxRunListing)); !errors.Is(err, ErrTooManyKeys) {
		t.Fatalf("a run's key with a comment past the bound: %v", err)
	}
	for i := MaxRunKeys; i < MaxAddedKeys; i++ {
		if _, err := add("", ""); err != nil {
			t.Fatalf("the person's key %d of %d: %v", i+1, MaxAddedKeys, err)
		}
	}
	if _, err := add("", ""); !errors.Is(err, ErrTooManyKeys) {
		t.Fatalf("a key past the agent's bound: %v", err)
	}
	if _, err := keys.RemoveAll("R1"); err != nil {
		t.Fatal(err)
	}
	if _, err := add("", strings.Repeat("c", maxAddedListing)); !errors.Is(err, ErrTooManyKeys) {
		t.Fatalf("a key whose comment would make listings too long: %v", err)
	}
	if _, err := add("", ""); err != nil {
		t.Fatalf("a key once the run's were removed: %v", err)
	}
}

// The constraints kept for keys added and removed are bounded: a client
// that adds and removes key after key, each with a confirmation or
// destinations, costs the gateway at most maxKeptKeys entries and
// maxKeptBytes of them; past that, an add that would keep constraints for
// another key is refused (never are kept ones dropped), while one without
// constraints, or of a key already kept, goes on.
func TestKeptConstraintsBounded(t *testing.T) {
	keys := &Keyring{}
	var firstKey ed25519.PrivateKey
	add := func(confirm bool, dest []DestConstraint) (*Identity, error) {
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		if firstKey == nil {
			firstKey = slices.Clone(priv)
		}
		id, err := NewIdentity(priv, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		id.Confirm, id.Dest = confirm, dest
		return id, keys.Add(id)
	}
	for i := range maxKeptKeys {
		id, err := add(true, nil)
		if err != nil {
			t.Fatalf("constrained key %d, added and removed: %v", i+1, err)
		}
		if _, err := keys.Remove(id.Key, ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := add(true, nil); !errors.Is(err, ErrTooManyKeys) {
		t.Fatalf("a constrained key past the bound on kept constraints: %v (%d kept)", err, len(keys.kept))
	}
	if len(keys.kept) != maxKeptKeys {
		t.Fatalf("%d keys' constraints kept, want %d", len(keys.kept), maxKeptKeys)
	}
	if _, err := add(false, nil); err != nil {
		t.Fatalf("an unconstrained key past the bound: %v", err)
	}
	again, _ := NewIdentity(firstKey, nil, "again")
	again.Confirm = true
	if err := keys.Add(again); err != nil {
		t.Fatalf("a key whose constraints are kept, added again: %v", err)
	}

	// Bytes: destinations as large as an add can carry.
	keys = &Keyring{}
	host := newEd25519Key(t)
	big := []DestConstraint{{To: Hop{Hostname: strings.Repeat("h", 200<<10), Keys: []HopKey{{Key: host}}}}}
	for n := 0; ; n++ {
		id, err := add(false, big)
		if errors.Is(err, ErrTooManyKeys) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if n*200<<10 > 2*maxKeptBytes {
			t.Fatalf("%d keys with 200 KiB of destinations each kept", n)
		}
		keys.Remove(id.Key, "")
	}
}

// The person's destination restriction holds for every copy of a
// security key, also one a run added before it, restricted to a host of
// its own choosing: the run holds no more than the key's public half and
// handle, and its earlier add does not keep the key usable where the
// person has since restricted it not to be.
func TestPersonsRestrictionHoldsForARunsEarlierCopy(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	pub, _ := ssh.NewPublicKey(priv.Public())
	a, b := newHost(t), newHost(t)
	to := func(h hostSigner) []DestConstraint {
		return []DestConstraint{{To: Hop{Hostname: "h", Keys: []HopKey{{Key: h.PublicKey()}}}}}
	}
	keys := &Keyring{}
	runs := &Identity{Key: newCert(t, pub, ssh.UserCert, time.Now().Add(time.Hour)), Source: Added, Run: "R1", Provider: "/usr/lib/sk.so", Dest: to(b)}
	runs.sk = &skKey{pub: runs.Key}
	if err := keys.Add(runs); err != nil {
		t.Fatal(err)
	}
	persons := &Identity{Key: pub, Source: Added, Provider: "/usr/lib/sk.so", Dest: to(a)}
	persons.sk = &skKey{pub: pub}
	if err := keys.Add(persons); err != nil {
		t.Fatal(err)
	}
	for _, id := range []*Identity{runs, persons} {
		_, dest := keys.Constraints(id)
		if err := permitted(dest, []Binding{{HostKey: b.PublicKey(), SessionID: []byte("sid")}}, new(string)); err == nil {
			t.Errorf("the copy the run %q added is used for host B, which the person's ssh-add -h no longer permits", id.Run)
		}
		if err := permitted(dest, []Binding{{HostKey: a.PublicKey(), SessionID: []byte("sid")}}, new(string)); err != nil {
			t.Errorf("the copy the run %q added is not used for host A, which the person's ssh-add -h permits: %v", id.Run, err)
		}
	}
}

// A run's destination restriction on a security key it added binds the
// run's copies alone: the person's copies of the key (the vault's, one
// the person adds after) stay usable where the person's own say, before
// and after the run removed its copy, so that a run cannot take the
// person's key from them by restricting it to a host of its choosing.
func TestRunsRestrictionLeavesThePersonsCopies(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	pub, _ := ssh.NewPublicKey(priv.Public())
	a, x := newHost(t), newHost(t)
	keys := &Keyring{}
	vault, err := NewIdentity(slices.Clone(priv), nil, "vault")
	if err != nil {
		t.Fatal(err)
	}
	keys.ReplaceVault([]*Identity{vault})
	runs := &Identity{Key: pub, Source: Added, Run: "R1", Provider: "/usr/lib/sk.so",
		Dest: []DestConstraint{{To: Hop{Hostname: "x", Keys: []HopKey{{Key: x.PublicKey()}}}}}}
	runs.sk = &skKey{pub: pub}
	if err := keys.Add(runs); err != nil {
		t.Fatal(err)
	}
	usableAtA := func(what string, id *Identity) {
		t.Helper()
		_, dest := keys.Constraints(id)
		if err := permitted(dest, []Binding{{HostKey: a.PublicKey(), SessionID: []byte("sid")}}, new(string)); err != nil {
			t.Errorf("%s: the person's copy is restricted by the run's ssh-add -h: %v", what, err)
		}
	}
	usableAtA("beside the run's copy", vault)
	if _, dest := keys.Constraints(runs); len(dest) == 0 {
		t.Error("the run's copy is not used under its own restriction")
	}
	if _, err := keys.Remove(pub, "R1"); err != nil {
		t.Fatal(err)
	}
	usableAtA("after the run removed its copy", vault)
	persons := &Identity{Key: pub, Source: Added, Provider: "/usr/lib/sk.so"}
	persons.sk = &skKey{pub: pub}
	if err := keys.Add(persons); err != nil {
		t.Fatal(err)
	}
	usableAtA("added by the person after", persons)
}

// A run's confirmation (ssh-add -c) on a security key it added binds
// the run's copies alone: the person's copies are not asked about on
// every use, for the gateway's life, because a run added the key with
// -c.
func TestRunsConfirmationLeavesThePersonsCopies(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	pub, _ := ssh.NewPublicKey(priv.Public())
	keys := &Keyring{}
	persons := &Identity{Key: pub, Source: Added, Provider: "/usr/lib/sk.so"}
	persons.sk = &skKey{pub: pub}
	if err := keys.Add(persons); err != nil {
		t.Fatal(err)
	}
	runs := &Identity{Key: newCert(t, pub, ssh.UserCert, time.Now().Add(time.Hour)), Source: Added, Run: "R1", Provider: "/usr/lib/sk.so", Confirm: true}
	runs.sk = &skKey{pub: runs.Key}
	if err := keys.Add(runs); err != nil {
		t.Fatal(err)
	}
	if confirm, _ := keys.Constraints(runs); !confirm {
		t.Error("the run's copy is not used under its own confirmation")
	}
	if confirm, _ := keys.Constraints(persons); confirm {
		t.Error("the person's copy asks for confirmation on every use since a run added the key with -c")
	}
	if _, err := keys.Remove(runs.Key, "R1"); err != nil {
		t.Fatal(err)
	}
	if confirm, _ := keys.Constraints(persons); confirm {
		t.Error("the person's copy asks for confirmation on every use after the run removed its copy added with -c")
	}
}
