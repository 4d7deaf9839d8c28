//go:build darwin && cgo

package keychain

import (
	"errors"
	"fmt"

	keychain "github.com/keybase/go-keychain"
)

// probeAccount is looked up (and never found) by Available.
const probeAccount = "availability-probe"

// Available reports whether the login keychain can be queried.
func Available() error {
	if _, err := keychain.GetGenericPassword(service, probeAccount, "", ""); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return nil
}

// Store saves secret for the vault, replacing any previous entry. The
// item is not synchronized and is readable only while the device is
// unlocked. The caller keeps and clears secret.
func Store(vaultID [16]byte, secret []byte) error {
	if len(secret) == 0 {
		return errEmptySecret
	}
	item := keychain.NewGenericPassword(service, account(vaultID), label(vaultID), secret, "")
	item.SetSynchronizable(keychain.SynchronizableNo)
	item.SetAccessible(keychain.AccessibleWhenUnlockedThisDeviceOnly)
	err := keychain.AddItem(item)
	if errors.Is(err, keychain.ErrorDuplicateItem) {
		query := keychain.NewItem()
		query.SetSecClass(keychain.SecClassGenericPassword)
		query.SetService(service)
		query.SetAccount(account(vaultID))
		update := keychain.NewItem()
		update.SetData(secret)
		err = keychain.UpdateItem(query, update)
	}
	if err != nil {
		return fmt.Errorf("keychain: store the vault key: %w", err)
	}
	return nil
}

// Load returns the secret stored for the vault, or ErrNotFound.
func Load(vaultID [16]byte) ([]byte, error) {
	data, err := keychain.GetGenericPassword(service, account(vaultID), "", "")
	if err != nil {
		return nil, fmt.Errorf("keychain: read the vault key: %w", err)
	}
	if data == nil {
		return nil, ErrNotFound
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("keychain: the entry for vault %s is empty; delete it and store the key again", vaultHex(vaultID))
	}
	return data, nil
}

// Delete removes the vault's entry, or returns ErrNotFound.
func Delete(vaultID [16]byte) error {
	err := keychain.DeleteGenericPasswordItem(service, account(vaultID))
	if errors.Is(err, keychain.ErrorItemNotFound) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("keychain: delete the vault key: %w", err)
	}
	return nil
}
