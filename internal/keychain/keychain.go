// Package keychain keeps one secret per vault in the operating system's
// keychain, so that the gateway can unlock the vault without asking for
// the passphrase. What is stored is the caller's business; postern stores
// the vault's exported data key (vault.DataKey.Export).
//
//	err := keychain.Available()            // nil when a keychain is usable
//	err = keychain.Store(id, secret)       // creates or replaces
//	secret, err := keychain.Load(id)       // ErrNotFound if none
//	err = keychain.Delete(id)              // ErrNotFound if none
//
// Entries are keyed by the vault ID (vault.Vault.ID, also readable
// without the passphrase through vault.ReadMeta).
//
// # Platforms
//
// Linux: the freedesktop Secret Service over the D-Bus session bus
// (gnome-keyring, KeePassXC, KWallet's bridge), in the default collection
// (usually "login"), with the attributes application=postern and
// postern-vault=<vault ID in hex>. The calls are this package's own
// (secrets_linux.go), on one connection for the process, made by package
// sessionbus: the bus is found through $DBUS_SESSION_BUS_ADDRESS or
// $XDG_RUNTIME_DIR/bus, never launched, and used only where its daemon
// runs as this user, with a deadline on each step. No session bus means
// ErrUnavailable. Secrets travel over D-Bus encrypted with the
// dh-ietf1024-sha256-aes128-cbc-pkcs7 session algorithm
// (session_linux.go), and the copies made to encrypt them are cleared. A
// locked collection is unlocked through the service's own prompt, whose
// answer counts only from the service's process; with no display that
// prompt is dismissed and the call fails with ErrDismissed, as it does
// when nobody answers it within two minutes, and the caller falls back
// to the passphrase.
//
// The Secret Service has no per-application access control: any process
// of the same user can read an unlocked collection (secret-tool lookup
// application postern). On Linux the keychain protects the data key
// against theft of the disk, not against other programs of the user.
//
// macOS (built with cgo): a generic password item in the login keychain,
// service "postern", account "vault-<vault ID in hex>", not synchronized
// to iCloud, readable only while the device is unlocked. The keychain's
// access list is bound to the binary's code signature: an ad-hoc signed
// (unsigned) build is a new application after every rebuild, and the user
// is asked again.
//
// Elsewhere, and on macOS without cgo, every call returns ErrUnavailable.
//
// Load returns a slice the caller owns and should clear after use.
package keychain

import (
	"encoding/hex"
	"errors"
)

var (
	// ErrUnavailable: no usable keychain on this system or in this build;
	// the error says why. Callers fall back to the passphrase.
	ErrUnavailable = errors.New("OS keychain unavailable")

	// ErrNotFound: no entry for this vault.
	ErrNotFound = errors.New("no keychain entry for this vault")

	// ErrDismissed: the keychain asked to be unlocked (the Secret
	// Service's prompt), and was not: the person dismissed the prompt,
	// it could not be shown, or nobody answered it in two minutes.
	ErrDismissed = errors.New("the keychain's prompt to unlock it was dismissed")
)

const (
	application = "postern"
	// service is the macOS service name and the Secret Service
	// "application" attribute.
	service = application
)

func vaultHex(id [16]byte) string { return hex.EncodeToString(id[:]) }

// label is what keychain browsers (Seahorse, Keychain Access) show.
func label(id [16]byte) string {
	return "postern vault key (vault " + vaultHex(id)[:8] + ")"
}

// account names a vault's entry on macOS.
func account(id [16]byte) string { return "vault-" + vaultHex(id) }

var errEmptySecret = errors.New("keychain: refusing to store an empty secret")
