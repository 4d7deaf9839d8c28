package vault

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/postern/postern/internal/atomicfile"
	"github.com/postern/postern/internal/smallfile"
)

// lockPath is the sibling lock file that serializes writers of path.
func lockPath(path string) string { return path + ".lock" }

// readFile reads a vault file, refusing anything that is not a regular
// file (a FIFO planted at the path would block the reader for ever) or
// is larger than a vault can be.
func readFile(path string) ([]byte, error) {
	data, err := smallfile.Read(path, int64(maxFileSize))
	if errors.Is(err, smallfile.ErrTooLarge) {
		return nil, &corruptError{path: path, reason: fmt.Sprintf("file is larger than any vault can be (%d bytes)", maxFileSize)}
	}
	return data, err
}

func readVault(path string) ([]byte, *fileParts, error) {
	data, err := readFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, notExist(path)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read vault: %w", err)
	}
	fp, err := parseFile(data)
	if err != nil {
		return nil, nil, withPath(err, path)
	}
	return data, fp, nil
}

// writeNew writes data as a new vault file at path: it creates the
// directory (0700) if needed, takes the writers' lock and refuses any file
// already at path. written reports whether path now holds data; it can
// be true together with an error when only the final directory sync
// failed.
func writeNew(path string, data []byte) (written bool, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, fmt.Errorf("create vault: %w", err)
	}
	unlock, err := lockFile(lockPath(path))
	if err != nil {
		return false, fmt.Errorf("create vault: %w", err)
	}
	defer unlock()
	if err := refuseExisting(path); err != nil {
		return false, err
	}
	err = atomicfile.Write(path, data, 0o600)
	if err != nil && !errors.Is(err, atomicfile.ErrNotDurable) {
		return false, fmt.Errorf("create vault: %w", err)
	}
	return true, err
}

// refuseExisting fails with ErrExist if anything is at path.
func refuseExisting(path string) error {
	_, err := os.Lstat(path)
	switch {
	case err == nil:
		return &pathError{
			msg: fmt.Sprintf("a file already exists at %s; postern will not overwrite it (move it aside first if it is a vault you no longer need)", path),
			err: ErrExist,
		}
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("create vault: %w", err)
	}
	return nil
}

// replace writes data over the vault file if the file is still the one
// this Vault read or last wrote. It reports whether the file was
// replaced.
func (v *Vault) replace(data []byte) (bool, error) {
	unlock, err := lockFile(lockPath(v.path))
	if err != nil {
		return false, fmt.Errorf("save vault: %w", err)
	}
	defer unlock()
	cur, err := readFile(v.path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, &pathError{
			msg: fmt.Sprintf("vault %s was removed since it was opened; nothing was written", v.path),
			err: ErrModified,
		}
	}
	if err != nil {
		return false, fmt.Errorf("save vault: %w", err)
	}
	if sha256.Sum256(cur) != v.disk {
		return false, &pathError{
			msg: fmt.Sprintf("vault %s changed on disk since it was opened (another postern command wrote it); nothing was written: open it again and redo the change", v.path),
			err: ErrModified,
		}
	}
	target, err := filepath.EvalSymlinks(v.path)
	if err != nil {
		return false, fmt.Errorf("save vault: %w", err)
	}
	// Under the lock no other writer is at work: a temporary file of the
	// vault is what an interrupted write left.
	atomicfile.RemoveTemps(filepath.Dir(target), filepath.Base(target), 0)
	err = atomicfile.Write(target, data, 0o600)
	if err != nil && !errors.Is(err, atomicfile.ErrNotDurable) {
		return false, fmt.Errorf("save vault: %w", err)
	}
	return true, err // err: written, but the directory sync failed
}

// ReadMeta returns the public metadata and the vault ID without the
// passphrase, reading only the header. They are NOT authenticated at this
// point: anyone who can write the file can change them, and only a later
// Open or OpenWithKey detects it. Use them for display and lookup (which
// keychain entry, which audit recipient to expect), never to decide trust.
func ReadMeta(path string) (map[string]string, [16]byte, error) {
	h, err := readHeader(path)
	if err != nil {
		return nil, h.id, err
	}
	return publicMeta(h.meta), h.id, nil
}

// ReadParams returns the KDF parameters and the vault ID from the
// header, without the passphrase and without deriving anything: NOT
// authenticated (as ReadMeta's), for a reader that remembers what an
// earlier Open of the same vault found, to tell a header changed since.
func ReadParams(path string) (Params, [16]byte, error) {
	h, err := readHeader(path)
	return h.params, h.id, err
}

// readHeader reads the header of the vault file at path.
func readHeader(path string) (header, error) {
	f, _, err := smallfile.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return header{}, notExist(path)
	}
	if err != nil {
		return header{}, fmt.Errorf("read vault: %w", err)
	}
	defer f.Close()
	buf, err := io.ReadAll(io.LimitReader(f, int64(prefixSize+maxHeaderSize)))
	if err != nil {
		return header{}, fmt.Errorf("read vault: %w", err)
	}
	h, _, err := parsePrefix(buf)
	if err != nil {
		return header{}, withPath(err, path)
	}
	return h, nil
}
