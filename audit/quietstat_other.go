//go:build unix && !linux

package audit

import "os"

// sizeQuiet returns the size of an open file.
func sizeQuiet(f *os.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// statPathQuiet returns the device and inode of the file at path,
// following no symbolic link.
func statPathQuiet(path string) (dev, ino uint64, err error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return 0, 0, err
	}
	dev, ino, _ = fileID(fi)
	return dev, ino, nil
}
