package gateway

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

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

// stateLockWait is how long a gateway waits for the state directory a
// stopping gateway holds: one stopped by "postern agent -k" (which does
// not wait, as ssh-agent -k does not) and started again at once, or a
// service restarted, lets it go within it, after its last write. A
// gateway that serves on is no reason to wait: the next one is refused
// at once.
var stateLockWait = 10 * time.Second

// stoppingMark is what a stopping gateway writes in the lock file.
const stoppingMark = "stopping\n"

// stateLock is a state directory this gateway holds.
type stateLock struct{ f *os.File }

// lockStateDir takes the state directory dir for this gateway. It fails
// at once if another gateway serves it, and waits up to stateLockWait
// for one that says it is stopping.
func lockStateDir(dir string) (*stateLock, error) {
	path := filepath.Join(dir, xdg.GatewayLockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the state directory's lock: %w", err)
	}
	deadline := time.Now().Add(stateLockWait)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || !saysStopping(f) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	switch {
	case errors.Is(err, syscall.EWOULDBLOCK):
		f.Close()
		return nil, stateHeldError{dir}
	case err != nil:
		f.Close()
		return nil, fmt.Errorf("the state directory's lock %s: %w", path, err)
	}
	f.Truncate(0)
	return &stateLock{f}, nil
}

// saysStopping reports whether the holder of the lock file f says it is
// stopping.
func saysStopping(f *os.File) bool {
	var b [len(stoppingMark)]byte
	n, _ := f.ReadAt(b[:], 0)
	return string(b[:n]) == stoppingMark
}

// stopping tells a gateway started meanwhile to wait for this one.
func (l *stateLock) stopping() { l.f.WriteAt([]byte(stoppingMark), 0) }

// release lets the state directory go.
func (l *stateLock) release() { l.f.Close() }
