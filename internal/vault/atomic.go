package vault

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// testOnlyBeforeRename, when set by a test, runs after the new contents are
// written and synced to the temporary file and before the rename; an error
// aborts the write there, as a crash would.
var testOnlyBeforeRename func() error

// writeFileAtomic replaces path with data so that a reader or a crash sees
// either the old file or the new one, never a mixture: the data goes to a
// temporary file (mode 0600) in the same directory, which is synced,
// renamed over path, and the directory synced so the rename is durable.
//
// renamed reports whether path now holds data; it can be true together
// with an error when only the final directory sync failed.
func writeFileAtomic(path string, data []byte) (renamed bool, err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return false, fmt.Errorf("create temporary file next to %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if !renamed {
			os.Remove(tmp)
		}
	}()
	if err := writeAndSync(f, data); err != nil {
		f.Close()
		return false, fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return false, fmt.Errorf("write %s: %w", tmp, err)
	}
	if testOnlyBeforeRename != nil {
		if err := testOnlyBeforeRename(); err != nil {
			return false, err
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return false, fmt.Errorf("replace %s: %w", path, err)
	}
	if err := syncDir(dir); err != nil {
		return true, fmt.Errorf("vault %s was written but its directory could not be synced (a power loss may undo the change): %w", path, err)
	}
	return true, nil
}

func writeAndSync(f *os.File, data []byte) error {
	if err := f.Chmod(0o600); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Sync()
}

// syncDir makes a rename in dir durable. File systems that cannot sync a
// directory (EINVAL, ENOTSUP) are tolerated.
func syncDir(dir string) error {
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
