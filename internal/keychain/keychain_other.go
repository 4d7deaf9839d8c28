//go:build !linux && !(darwin && cgo)

package keychain

import (
	"fmt"
	"runtime"
)

func unavailable() error {
	if runtime.GOOS == "darwin" {
		return fmt.Errorf("%w: this postern was built without cgo, which the macOS keychain needs", ErrUnavailable)
	}
	return fmt.Errorf("%w: postern has no keychain support on %s", ErrUnavailable, runtime.GOOS)
}

// Available reports why there is no keychain in this build.
func Available() error { return unavailable() }

// Store always fails with ErrUnavailable in this build.
func Store(vaultID [16]byte, secret []byte) error { return unavailable() }

// Load always fails with ErrUnavailable in this build.
func Load(vaultID [16]byte) ([]byte, error) { return nil, unavailable() }

// Delete always fails with ErrUnavailable in this build.
func Delete(vaultID [16]byte) error { return unavailable() }
