package audit

import (
	"os"

	"golang.org/x/sys/unix"
)

// The checks before each write ask for a file's size and identity, never
// for its times. On Linux a stat that reads a file's change time makes the
// next write stamp the file with a fine-grained new time (multigrain
// timestamps) instead of the clock tick it already holds; the inode is
// then dirty at every write, and fdatasync on a file system without a
// journal (ext4 in that mode) writes the inode's block as well: a second
// synchronous write for each record. Asked only for size and inode, the
// kernel leaves the times coarse, and a tick's records share one inode
// write.

// sizeQuiet returns the size of an open file.
func sizeQuiet(f *os.File) (int64, error) {
	var st unix.Statx_t
	err := statx(int(f.Fd()), "", unix.AT_EMPTY_PATH, unix.STATX_SIZE, &st)
	return int64(st.Size), err
}

// statPathQuiet returns the device and inode of the file at path,
// following no symbolic link.
func statPathQuiet(path string) (dev, ino uint64, err error) {
	var st unix.Statx_t
	err = statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_INO, &st)
	return unix.Mkdev(st.Dev_major, st.Dev_minor), st.Ino, err
}

func statx(dirfd int, path string, flags, mask int, st *unix.Statx_t) error {
	for {
		err := unix.Statx(dirfd, path, flags, mask, st)
		if err != unix.EINTR {
			if err != nil {
				return &os.PathError{Op: "statx", Path: path, Err: err}
			}
			return nil
		}
	}
}
