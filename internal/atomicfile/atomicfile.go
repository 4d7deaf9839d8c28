// Package atomicfile replaces postern's state files (the vault, the audit
// key, pin and recipient files, the vault epoch, the boot id, the bastion's
// keys and known_hosts, the approval history) so that a reader or a crash
// sees either the old content or the new, never a mix. There is one
// durability policy, and Write is the only place that implements it:
//
//  1. write the data to a temporary file in the target's directory, with
//     the final permissions, named ".NAME.RANDOM.tmp" (NAME is the
//     target's base name);
//  2. fsync the temporary file and close it;
//  3. rename it over the target;
//  4. fsync the directory, so that the rename survives a power loss. A file
//     system that cannot sync a directory (EINVAL, ENOTSUP) is accepted.
//
// A failure before the rename removes the temporary file and leaves the
// target as it was. A crash before the rename leaves the temporary file
// behind: IsTemp recognises it by its name, and it never replaces the
// target on its own; RemoveTemps removes such files. A failure of step 4
// alone is an ErrNotDurable error:
// the target already holds the new data, but a power loss may undo that.
package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// ErrNotDurable matches the error Write returns when the target was
// replaced but its directory could not be synced.
var ErrNotDurable = errors.New("written, but the directory could not be synced (a power loss may undo the change)")

type notDurableError struct {
	path string
	err  error
}

func (e *notDurableError) Error() string {
	return fmt.Sprintf("%s was written but its directory could not be synced (a power loss may undo the change): %v", e.path, e.err)
}

func (e *notDurableError) Is(target error) bool { return target == ErrNotDurable }
func (e *notDurableError) Unwrap() error        { return e.err }

// tempSuffix ends every temporary file's name.
const tempSuffix = ".tmp"

// IsTemp reports whether name (a base name) is a temporary file Write
// makes: ".NAME.RANDOM.tmp".
func IsTemp(name string) bool {
	if !strings.HasPrefix(name, ".") || !strings.HasSuffix(name, tempSuffix) {
		return false
	}
	mid := strings.TrimSuffix(name[1:], tempSuffix)
	i := strings.LastIndexByte(mid, '.')
	return i > 0 && i < len(mid)-1
}

// isTempOf reports whether name, a temporary file's, is one Write makes
// for target base: ".BASE.RANDOM.tmp", whose random part (os.CreateTemp's)
// holds no dot.
func isTempOf(name, base string) bool {
	random, ok := strings.CutPrefix(strings.TrimSuffix(name, tempSuffix), "."+base+".")
	return ok && random != "" && !strings.Contains(random, ".")
}

// RemoveTemps removes the temporary files a crash left in dir: those of
// target base (every target when base is ""), last changed at least
// olderThan ago, so that a write in progress keeps its file (a caller that
// holds the writers' lock passes 0). A temporary file of another target
// whose name starts with base and a dot (".vault.generation.RANDOM.tmp"
// for base "vault") is not base's. It returns the names removed.
func RemoveTemps(dir, base string, olderThan time.Duration) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range entries {
		name := e.Name()
		if !IsTemp(name) || base != "" && !isTempOf(name, base) {
			continue
		}
		if fi, err := e.Info(); err != nil || !fi.Mode().IsRegular() || time.Since(fi.ModTime()) < olderThan {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err == nil {
			removed = append(removed, name)
		}
	}
	return removed, nil
}

// beforeRename is a test hook: see SetBeforeRenameForTest.
var beforeRename atomic.Pointer[func(tmp string) error]

// SetBeforeRenameForTest makes every Write call f once the temporary file
// is complete and synced, just before the rename; an error from f aborts
// the write there, as a crash would (the temporary file is removed, the
// target is untouched). It returns the function that removes f. Tests
// only.
func SetBeforeRenameForTest(f func(tmp string) error) (restore func()) {
	beforeRename.Store(&f)
	return func() { beforeRename.Store(nil) }
}

// syncDirHook is a test hook: see SetSyncDirForTest.
var syncDirHook atomic.Pointer[func(dir string) error]

// SetSyncDirForTest makes every Write call f in place of the sync of the
// target's directory, after the rename: an error from f is the
// directory's sync failing, as a failing disk makes it fail. It returns
// the function that removes f. Tests only.
func SetSyncDirForTest(f func(dir string) error) (restore func()) {
	syncDirHook.Store(&f)
	return func() { syncDirHook.Store(nil) }
}

// Write replaces path with data, with permissions perm, following the
// package's policy. The error says which step failed; it matches
// ErrNotDurable when only the final directory sync failed, and then path
// already holds data.
func Write(path string, data []byte, perm os.FileMode) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".*"+tempSuffix)
	if err != nil {
		return fmt.Errorf("create a temporary file next to %s: %w", path, err)
	}
	tmp := f.Name()
	renamed := false
	defer func() {
		if !renamed {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if hook := beforeRename.Load(); hook != nil {
		if err := (*hook)(tmp); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	renamed = true
	syncDir := SyncDir
	if hook := syncDirHook.Load(); hook != nil {
		syncDir = *hook
	}
	if err := syncDir(dir); err != nil {
		return &notDurableError{path: path, err: err}
	}
	return nil
}

// SyncDir makes the creation, removal or renaming of a file in dir
// durable. File systems that cannot sync a directory (EINVAL, ENOTSUP) are
// accepted.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return err
	}
	return nil
}
