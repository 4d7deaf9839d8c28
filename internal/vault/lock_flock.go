//go:build linux || darwin || freebsd || openbsd || netbsd || dragonfly

package vault

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockTimeout bounds how long a writer waits for another one.
const lockTimeout = 10 * time.Second

// lockFile takes an exclusive flock on path (created 0600 if needed) and
// returns the function that releases it. The lock file is never removed:
// removing it would let two writers lock two different files.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file %s: %w", path, err)
	}
	fd := int(f.Fd())
	deadline := time.Now().Add(lockTimeout)
	for {
		err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				syscall.Flock(fd, syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("another process has been writing the vault for over %v (it holds %s); retry later", lockTimeout, path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
