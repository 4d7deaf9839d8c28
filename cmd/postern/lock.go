package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/keychain"
	"github.com/postern/postern/internal/vault"
)

const lockUsage = `Usage: postern lock [--socket PATH]

Lock the gateway: decrypted keys are wiped and every approval ends.
Without a vault the lock has no password: only postern unlock, run
outside every run, lifts it, asking for none.
`

const unlockUsage = `Usage: postern unlock [--passphrase-file FILE] [--remember] [--socket PATH]
       postern unlock --keychain [--socket PATH]
       postern unlock --forget

Unlock the gateway's vault. The passphrase is read from FILE (or
$POSTERN_PASSPHRASE_FILE), else from the terminal, else through
$SSH_ASKPASS. --remember also keeps the vault's data key in the OS
keychain (the Secret Service on Linux, the Keychain on macOS), so that
--keychain unlocks without the passphrase; --forget removes it (the
gateway's vault's key or, with no gateway answering, that of the vault
of this state directory). On Linux any program of the user can read the
Secret Service: the keychain guards against theft of the disk, not
against other programs of the user.
`

func cmdLock(args []string, out, errw io.Writer) error {
	fs := newFlags("lock", lockUsage)
	c, err := gatewayFlags(fs, args, noOperands(fs))
	if err != nil {
		return err
	}
	res, err := c.Lock(context.Background())
	if err != nil {
		return err
	}
	if res.Already {
		fmt.Fprintln(out, "already locked")
		return nil
	}
	fmt.Fprintln(out, "locked")
	return nil
}

func cmdUnlock(args []string, out, errw io.Writer) error {
	fs := newFlags("unlock", unlockUsage)
	pfile := passphraseFileFlag(fs)
	remember := fs.Bool("remember", false, "keep the vault's data key in the OS keychain")
	fromKeychain := fs.Bool("keychain", false, "unlock with the data key kept in the OS keychain")
	forget := fs.Bool("forget", false, "remove the data key from the OS keychain")
	sock := socketFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := noOperands(fs)(); err != nil {
		return err
	}
	// The three forms do not mix, and a mix is refused before the gateway
	// is asked or a passphrase read.
	if err := exclusive(fs, "forget", "remember", "keychain", "passphrase-file", "socket"); err != nil {
		return err
	}
	if err := exclusive(fs, "keychain", "remember", "passphrase-file"); err != nil {
		return err
	}
	if *forget {
		return forgetKeychain(out)
	}
	c, err := gatewayClient(*sock)
	if err != nil {
		return err
	}
	// As lock of a locked vault does, unlock of an unlocked one succeeds,
	// without asking for the passphrase; so does unlock of a gateway
	// that keeps no vault and is not locked.
	st, serr := c.Status(context.Background())
	if serr == nil && notLockedState(st) {
		// --remember is said, not ignored: nothing went into the keychain.
		switch {
		case *remember && st.Vault.State == api.VaultNone:
			return withHint(errors.New("not locked: the gateway keeps no vault, whose key --remember would keep in the keychain"), `"postern vault init" creates one`)
		case *remember:
			return withHint(errors.New("already unlocked: --remember keeps the vault's key in the keychain only as it unlocks"), `run "postern lock", then "postern unlock --remember"`)
		}
		fmt.Fprintln(out, notLocked(st))
		return nil
	}
	// The keychain keeps the key of the vault the gateway unlocks, which
	// its status names, whatever vault $XDG_STATE_HOME names.
	gatewayVault := ""
	if serr == nil {
		gatewayVault = st.Vault.Path
	}
	var a api.UnlockArgs
	switch {
	case *fromKeychain:
		if a.DataKey, err = keychainKey(gatewayVault); err != nil {
			return err
		}
	case *remember:
		// Open the vault here, with the passphrase, and hand the gateway
		// the data key that goes into the keychain.
		v, err := openVaultAt(gatewayVault, *pfile)
		if err != nil {
			return err
		}
		dk, err := v.DataKey()
		v.Wipe()
		if err != nil {
			return err
		}
		a.DataKey = dk.Export()
		dk.Wipe()
		if err := keychain.Store(v.ID(), a.DataKey); err != nil {
			clear(a.DataKey)
			return fmt.Errorf("keeping the key in the keychain: %w", err)
		}
	case serr == nil && st.Vault.NoPassword:
		// postern lock without a vault set no password: none to ask for.
	default:
		if a.Passphrase, err = readPassphrase(*pfile, "Enter passphrase for the postern vault: "); err != nil {
			return err
		}
	}
	defer clear(a.Passphrase)
	defer clear(a.DataKey)
	ctx := context.Background()
	if err := c.Unlock(ctx, a); err != nil {
		// Unlocked by another while the passphrase was read: as an unlock
		// of an unlocked vault, a success, not a mistake on the command
		// line.
		if !api.HasCode(err, api.CodeUsage) {
			return err
		}
		if st, serr := c.Status(ctx); serr == nil && notLockedState(st) {
			fmt.Fprintln(out, notLocked(st))
			return nil
		}
		return err
	}
	if st, err := c.Status(ctx); err == nil {
		fmt.Fprintf(out, "unlocked (vault epoch %d, %s)\n", st.Vault.Epoch, plural(st.Counts.Keys, "key"))
	}
	return nil
}

// notLockedState reports whether the gateway is unlocked, or keeps no
// vault and is not locked: unlock has nothing to do.
func notLockedState(st *api.Status) bool {
	return st.Vault.State == api.VaultUnlocked || st.Vault.State == api.VaultNone
}

// notLocked is what unlock says of a gateway it finds not locked.
func notLocked(st *api.Status) string {
	if st.Vault.State == api.VaultNone {
		return "not locked: the gateway keeps no vault"
	}
	return "already unlocked"
}

// keychainKey loads the data key of the vault at path from the OS
// keychain.
// path is the vault's file ("": this state directory's).
func keychainKey(path string) ([]byte, error) {
	if err := holdSecrets(); err != nil {
		return nil, err
	}
	id, err := keychainVaultID(path)
	if err != nil {
		return nil, err
	}
	k, err := keychain.Load(id)
	if errors.Is(err, keychain.ErrNotFound) {
		return nil, withHint(errors.New("the keychain holds no key for this vault"), "unlock once with the passphrase and --remember")
	}
	return k, err
}

// forgetKeychain removes from the OS keychain the data key of the vault
// of the gateway at $SSH_AUTH_SOCK, which --remember kept, whatever vault
// $XDG_STATE_HOME names; without a gateway answering, that of this state
// directory's vault.
func forgetKeychain(out io.Writer) error {
	path := ""
	if _, st := answeringGateway(""); st != nil {
		path = st.Vault.Path
	}
	id, err := keychainVaultID(path)
	if err != nil {
		return err
	}
	if err := keychain.Delete(id); err != nil {
		return err
	}
	fmt.Fprintln(out, "the vault's key is no longer in the keychain")
	return nil
}

// keychainVaultID returns the id of the vault at path ("": this state
// directory's), under which the keychain keeps its data key.
func keychainVaultID(path string) ([16]byte, error) {
	if path == "" {
		var err error
		if path, err = vaultPath(); err != nil {
			return [16]byte{}, err
		}
	}
	_, id, err := vault.ReadMeta(path)
	return id, err
}
