package audit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/postern/postern/internal/atomicfile"
	"github.com/postern/postern/internal/xdg"
)

// Retire moves the audit log at logPath (its segments and the side files
// of torn writes too) and the setup in stateDir (key, pin, recipient and
// anchor files) into the new directory dest, so that a new log can be set
// up in their place while the old one stays readable and verifiable where
// it went. It holds the log's lock while it moves, so it fails with
// ErrLocked while a gateway writes the log. It returns the files moved;
// on an error, the files it had moved are put back.
func Retire(stateDir, logPath, dest string) ([]string, error) {
	// Not blocking and not following a link: what a program put in the
	// log's place (a FIFO nobody writes to, a link) moves aside with the
	// rest instead of holding this open for ever. No gateway writes
	// through a link (Open refuses one), so there is no lock to take.
	f, err := os.OpenFile(logPath, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	switch {
	case err == nil:
		defer f.Close()
		held, err := lockFile(f)
		if held {
			return nil, fmt.Errorf("%w: %s is held by a running gateway; stop it first", ErrLocked, logPath)
		}
		if err != nil {
			return nil, fmt.Errorf("lock audit log %s: %w", logPath, err)
		}
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ELOOP):
	default:
		return nil, err
	}
	var names []string
	if _, err := os.Lstat(logPath); err == nil {
		names = append(names, logPath)
	}
	more, err := filepath.Glob(globEscape(logPath) + ".*")
	if err != nil {
		return nil, err
	}
	names = append(names, more...)
	for _, n := range []string{xdg.AuditKeyFile, xdg.AuditPinFile, xdg.AuditRecipientFile, xdg.AuditAnchorFile} {
		p := filepath.Join(stateDir, n)
		if _, err := os.Lstat(p); err == nil && !slices.Contains(names, p) {
			names = append(names, p)
		}
	}
	if err := os.Mkdir(dest, 0o700); err != nil {
		return nil, fmt.Errorf("retire the audit log: %w", err)
	}
	var moved []string
	for _, from := range names {
		to := filepath.Join(dest, filepath.Base(from))
		if err := os.Rename(from, to); err != nil {
			// Put back what moved, so that nothing is lost half way.
			for _, m := range slices.Backward(moved) {
				os.Rename(filepath.Join(dest, filepath.Base(m)), m)
			}
			os.Remove(dest)
			return nil, fmt.Errorf("retire the audit log: %w", err)
		}
		moved = append(moved, from)
	}
	if err := atomicfile.SyncDir(dest); err != nil {
		return moved, err
	}
	return moved, atomicfile.SyncDir(stateDir)
}

// Unretire puts back the files Retire moved into dest, and removes dest
// if that leaves it empty: for a caller whose next step failed.
func Unretire(dest string, moved []string) error {
	var first error
	for _, m := range moved {
		if err := os.Rename(filepath.Join(dest, filepath.Base(m)), m); err != nil && first == nil {
			first = err
		}
	}
	os.Remove(dest)
	return first
}

// globEscape escapes the characters filepath.Match gives a meaning.
func globEscape(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', '\\':
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}
