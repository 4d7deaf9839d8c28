package e2e

import (
	"os"
	"strings"
	"testing"

	"github.com/postern/postern/internal/keychain/keychaintest"
)

// TestKeychainUnlock remembers the vault's key in a throwaway
// gnome-keyring on a private session bus.
func TestKeychainUnlock(t *testing.T) {
	e := newEnv(t)
	e.Setenv("DBUS_SESSION_BUS_ADDRESS", keychaintest.SessionBus(t))
	pass := e.WriteFile("pass", "keychain pass\n", 0o600)
	e.MustRun("postern", "vault", "init", "--passphrase-file", pass)
	k := e.Keygen("k", "ed25519", 0, "")
	e.MustRun("postern", "vault", "add", "--passphrase-file", pass, k)
	e.StartAgent()
	if r := e.Run("postern", "unlock", "--keychain"); r.Code == 0 || !strings.Contains(r.Stderr, "--remember") {
		t.Fatalf("keychain unlock before --remember: %s", r)
	}
	e.MustRun("postern", "unlock", "--remember", "--passphrase-file", pass)
	e.MustRun("postern", "lock")
	// No passphrase from now on.
	os.Remove(pass)
	e.MustRun("postern", "unlock", "--keychain")
	if st := status(t, e); st.Vault.State != "unlocked" || st.Counts.Keys != 1 {
		t.Fatalf("after a keychain unlock: %+v", st)
	}
	e.MustRun("postern", "lock")
	// A passphrase change replaces the data key: the kept one is refused
	// with a hint, and the vault stays locked.
	pass = e.WriteFile("pass", "keychain pass\n", 0o600)
	newPass := e.WriteFile("new-pass", "another pass\n", 0o600)
	e.MustRun("postern", "vault", "passwd", "--passphrase-file", pass, "--new-passphrase-file", newPass)
	if r := e.Run("postern", "unlock", "--keychain"); r.Code == 0 || !strings.Contains(r.Stderr, "passphrase changed") {
		t.Fatalf("keychain unlock with a stale key: %s", r)
	}
	if st := status(t, e); st.Vault.State != "locked" {
		t.Fatalf("after a stale keychain key: %+v", st)
	}
	e.MustRun("postern", "unlock", "--forget")
	if r := e.Run("postern", "unlock", "--keychain"); r.Code == 0 {
		t.Fatal("the key was still in the keychain after --forget")
	}
}

// postern unlock unlocks the gateway's vault: with --remember it keeps
// that vault's key, and --keychain unlocks it with that key, also when
// $XDG_STATE_HOME names the state directory of another vault, where
// --remember opened and kept that other vault's key and the gateway then
// refused it as "an old key for this vault (its passphrase changed)".
func TestKeychainRemembersTheGatewaysVault(t *testing.T) {
	e := newEnv(t)
	e.Setenv("DBUS_SESSION_BUS_ADDRESS", keychaintest.SessionBus(t))
	pass := e.WriteFile("pass", "keychain pass\n", 0o600)
	e.MustRun("postern", "vault", "init", "--passphrase-file", pass)
	e.MustRun("postern", "vault", "add", "--passphrase-file", pass, e.Keygen("k", "ed25519", 0, ""))
	e.StartAgent()
	e.Setenv("XDG_STATE_HOME", e.Path("other-state"))
	e.MustRun("postern", "vault", "init", "--passphrase-file", pass)
	e.MustRun("postern", "unlock", "--remember", "--passphrase-file", pass)
	if st := status(t, e); st.Vault.State != "unlocked" || st.Counts.Keys != 1 {
		t.Fatalf("after unlock --remember: %+v", st)
	}
	e.MustRun("postern", "lock")
	e.MustRun("postern", "unlock", "--keychain")
	if st := status(t, e); st.Vault.State != "unlocked" || st.Counts.Keys != 1 {
		t.Fatalf("after a keychain unlock: %+v", st)
	}
}

// postern unlock --forget removes the key of the gateway's vault, as
// --remember kept it, also when $XDG_STATE_HOME names the state
// directory of another vault, where it removed that other vault's key
// (if any) and left the gateway's in the keychain.
func TestKeychainForgetsTheGatewaysVault(t *testing.T) {
	e := newEnv(t)
	e.Setenv("DBUS_SESSION_BUS_ADDRESS", keychaintest.SessionBus(t))
	pass := e.WriteFile("pass", "keychain pass\n", 0o600)
	e.MustRun("postern", "vault", "init", "--passphrase-file", pass)
	e.StartAgent()
	e.MustRun("postern", "unlock", "--remember", "--passphrase-file", pass)
	e.MustRun("postern", "lock")
	e.Setenv("XDG_STATE_HOME", e.Path("other-state"))
	e.MustRun("postern", "vault", "init", "--passphrase-file", pass)
	e.MustRun("postern", "unlock", "--forget")
	if r := e.Run("postern", "unlock", "--keychain"); r.Code == 0 {
		t.Fatalf("the gateway's vault unlocked with its key after unlock --forget: %s", r)
	}
	if st := status(t, e); st.Vault.State != "locked" {
		t.Fatalf("after unlock --forget: %+v", st)
	}
}
