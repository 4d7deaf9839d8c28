//go:build !(linux || darwin || freebsd || openbsd || netbsd || dragonfly)

package vault

import (
	"errors"
	"runtime"
)

// lockFile is not implemented on this platform: writing a vault fails
// rather than risk two writers interleaving.
func lockFile(path string) (unlock func(), err error) {
	return nil, errors.New("writing a vault needs flock, which postern does not support on " + runtime.GOOS)
}
