package sshagent

import (
	"crypto/ed25519"
	"crypto/rand"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// An add forwarded to the upstream agent (upstream_changes = forward) of
// a key postern holds too keeps its constraints for the key, as an add
// postern keeps: postern's own copy (the vault's), which is listed and
// used before the upstream's, is used under them, and an add without
// any lifts them. Of a key only the upstream holds, it keeps nothing:
// the upstream confirms itself, once.
func TestUpstreamForwardedAddKeepsConstraints(t *testing.T) {
	up := startUpstream(t)
	ts := startGated(t, up, UpstreamForward)
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	pub, _ := ssh.NewPublicKey(k.Public())
	vaultCopy, err := NewIdentity(k, nil, "vault copy")
	if err != nil {
		t.Fatal(err)
	}
	vaultCopy.Source = Vault
	if err := ts.srv.Keys.Add(vaultCopy); err != nil {
		t.Fatal(err)
	}
	ag, _ := ts.client(t)
	if err := ag.Add(agent.AddedKey{PrivateKey: k, Comment: "-c", ConfirmBeforeUse: true}); err != nil || !upstreamHas(up, pub) {
		t.Fatalf("ssh-add -c did not go upstream: %v", err)
	}
	if _, err := ag.Sign(pub, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if r := ts.dec.last(); r.Key.Upstream || !r.Key.Confirm {
		t.Fatalf("after ssh-add -c, forwarded, the vault's copy was used without confirmation: %+v", r.Key)
	}
	if err := ag.Add(agent.AddedKey{PrivateKey: k, Comment: "plain"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ag.Sign(pub, []byte("x")); err != nil || ts.dec.last().Key.Confirm {
		t.Fatalf("an add without constraints, forwarded, did not lift them: %v, %+v", err, ts.dec.last().Key)
	}
	_, k2, _ := ed25519.GenerateKey(rand.Reader)
	pub2, _ := ssh.NewPublicKey(k2.Public())
	if err := ag.Add(agent.AddedKey{PrivateKey: k2, ConfirmBeforeUse: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := ag.Sign(pub2, []byte("x")); err != nil || !ts.dec.last().Key.Upstream || ts.dec.last().Key.Confirm {
		t.Fatalf("a key only the upstream holds, added with -c: %v, %+v", err, ts.dec.last().Key)
	}
}

// Add takes a key with ssh-add -c as ssh-agent does (which asks itself
// before each use); x/crypto's keyring does not know the constraint.
func (u *upstreamStub) Add(key agent.AddedKey) error {
	key.ConfirmBeforeUse = false
	return u.ExtendedAgent.Add(key)
}
