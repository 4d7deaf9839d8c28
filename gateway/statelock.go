package gateway

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/xdg"
)

// One gateway serves a state directory. Each keeps the host inventory,
// the display context and the vault epoch in memory and writes them
// whole: a second gateway on the same directory would write its copy
// over the first one's changes (a host one added, dropped by the
// other's next change). The audit log's lock kept a second one out only
// once a vault had set up a log; the state directory's lock file does it
// always. The lock is the kernel's (flock): a gateway killed lets it go.

// stateHeldError is a state directory another running gateway serves.
type stateHeldError struct{ dir string }

func (e stateHeldError) Error() string {
	return fmt.Sprintf("the state directory %s is served by another running gateway (it holds %s)", e.dir, xdg.GatewayLockFile)
}

func (stateHeldError) Unwrap() error { return api.ErrStateHeld }

// lockStateDir takes the state directory dir for this gateway, or fails
// at once if another gateway has it. release lets it go.
func lockStateDir(dir string) (release func(), err error) {
	path := filepath.Join(dir, xdg.GatewayLockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the state directory's lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	switch {
	case errors.Is(err, syscall.EWOULDBLOCK):
		f.Close()
		return nil, stateHeldError{dir}
	case err != nil:
		f.Close()
		return nil, fmt.Errorf("the state directory's lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
