package confine

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// A step changes one path of the run's mount namespace.
type step struct {
	path string
	from string // where the tree comes from: path, except for stepOwn
	kind stepKind
	tree int // a detached copy of the tree, for expose and own steps
	dir  bool
}

type stepKind int

const (
	stepHide     stepKind = iota // an empty private directory (or file) in place of path
	stepExposeRW                 // the original tree, writable
	stepOwn                      // the tree of from, writable, in place of path
	stepExposeRO                 // the original tree, read-only
	stepPin                      // the tree as the steps before left it, mounted on itself
)

// devNodes are the devices a run gets in its private /dev.
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

// plan orders the steps: shallower paths first, and at one depth hiding
// before exposing, so that a tree exposed inside a hidden one, or hidden
// inside an exposed one, ends on top. /tmp is always hidden.
func plan(s *Spec) []step {
	var steps []step
	add := func(kind stepKind, paths ...string) {
		for _, p := range paths {
			if p == "" || !filepath.IsAbs(p) {
				continue
			}
			p = filepath.Clean(p)
			if p == "/" {
				continue
			}
			steps = append(steps, step{path: p, kind: kind, tree: -1})
		}
	}
	add(stepHide, "/tmp")
	add(stepHide, s.Hide...)
	add(stepExposeRW, s.Dir)
	add(stepExposeRW, s.ReadWrite...)
	add(stepExposeRW, s.Sockets...)
	add(stepExposeRO, s.ReadOnly...)
	for _, o := range s.Own {
		if filepath.IsAbs(o.Path) && filepath.IsAbs(o.From) && filepath.Clean(o.Path) != "/" {
			steps = append(steps, step{path: filepath.Clean(o.Path), from: filepath.Clean(o.From), kind: stepOwn, tree: -1})
		}
	}
	slices.SortStableFunc(steps, func(a, b step) int {
		if d := depth(a.path) - depth(b.path); d != 0 {
			return d
		}
		return int(a.kind) - int(b.kind)
	})
	// A path named twice gets each step in turn: the last (read-only
	// over writable) ends on top. The pins come last.
	return append(steps, pins(s)...)
}

// pins are the directories between a writable tree (the working
// directory, a read_write tree) and a path hidden or shown read-only
// inside it. Each is made a mount point of itself, as the other steps
// left it: the kernel refuses to rename a mount point, but not its
// parent, so that a run could otherwise move a protected path's parent
// aside and put a tree of its own in its place (postern's configuration,
// its state directory), which programs outside the run would then use.
func pins(s *Spec) []step {
	var out []step
	seen := map[string]bool{}
	for _, w := range append(s.writableTrees(), s.ownPaths()...) {
		if !filepath.IsAbs(w) {
			continue
		}
		w = filepath.Clean(w)
		for _, p := range append(slices.Clone(s.Hide), s.ReadOnly...) {
			if !filepath.IsAbs(p) {
				continue
			}
			p = filepath.Clean(p)
			for a := filepath.Dir(p); a != w && Under(a, w) && !seen[a]; a = filepath.Dir(a) {
				seen[a] = true
				out = append(out, step{path: a, kind: stepPin, tree: -1, dir: true})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b step) int { return depth(a.path) - depth(b.path) })
	return out
}

func depth(p string) int { return strings.Count(p, "/") }

// setUpMounts builds the run's view of the file system. It runs in the
// helper, in the run's fresh mount namespace.
func setUpMounts(s *Spec) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making the mounts private: %w", err)
	}
	steps := plan(s)
	// Take detached copies of everything to expose before anything is
	// covered or made read-only.
	for i := range steps {
		st := &steps[i]
		if st.kind == stepHide || st.kind == stepPin {
			continue
		}
		from := cmp.Or(st.from, st.path)
		fi, err := os.Stat(from)
		if err != nil {
			continue
		}
		st.dir = fi.IsDir()
		fd, err := cloneTree(from, st.kind == stepExposeRO)
		if err != nil {
			return fmt.Errorf("copying %s: %w", from, err)
		}
		st.tree = fd
	}
	devs := map[string]int{}
	for _, n := range devNodes {
		if fd, err := cloneTree("/dev/"+n, false); err == nil {
			devs[n] = fd
		}
	}
	// Everything read-only; what is writable is mounted on top.
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("making the file system read-only: %w", err)
	}
	if err := setUpDev(devs); err != nil {
		return fmt.Errorf("setting up /dev: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting /proc: %w", err)
	}
	for _, st := range steps {
		if err := st.apply(); err != nil {
			return err
		}
	}
	return nil
}

// hide puts an empty private directory (dir) or the null device in place
// of path.
func hide(path string, dir bool) error {
	var err error
	if dir {
		err = unix.Mount("tmpfs", path, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700")
	} else {
		err = unix.Mount("/dev/null", path, "", unix.MS_BIND, "")
	}
	if err != nil && !gone(path, err) {
		return fmt.Errorf("hiding %s: %w", path, err)
	}
	return nil
}

// gone reports whether err, from a mount on path, came of path being gone
// since it was looked at: a socket whose program ended, or a directory
// removed, between the listing of what to hide and the mount. What is
// gone has nothing left to hide or pin; anything else (a path there now,
// another error) keeps the error, and the run does not start.
func gone(path string, err error) bool {
	if !errors.Is(err, unix.ENOENT) {
		return false
	}
	_, err = os.Lstat(path)
	return errors.Is(err, fs.ErrNotExist)
}

// cloneTree returns a detached copy of the mount tree at path, read-only
// if ro.
func cloneTree(path string, ro bool) (int, error) {
	fd, err := unix.OpenTree(unix.AT_FDCWD, path, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return -1, err
	}
	if ro {
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	return fd, nil
}

func (st *step) apply() error {
	if st.kind == stepPin {
		if _, err := os.Lstat(st.path); err != nil {
			// Inside a hidden tree: nothing outside the run to protect.
			return nil
		}
		fd, err := cloneTree(st.path, false)
		if err != nil {
			if gone(st.path, err) {
				return nil
			}
			return fmt.Errorf("pinning %s: %w", st.path, err)
		}
		defer unix.Close(fd)
		if err := unix.MoveMount(fd, "", unix.AT_FDCWD, st.path, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil && !gone(st.path, err) {
			return fmt.Errorf("pinning %s: %w", st.path, err)
		}
		return nil
	}
	if st.kind == stepHide {
		fi, err := os.Lstat(st.path)
		if err != nil {
			return nil // nothing to hide
		}
		return hide(st.path, fi.IsDir())
	}
	if st.tree < 0 {
		return nil // did not exist
	}
	defer unix.Close(st.tree)
	if err := mountPoint(st.path, st.dir); err != nil {
		return fmt.Errorf("showing %s: %w", st.path, err)
	}
	if err := unix.MoveMount(st.tree, "", unix.AT_FDCWD, st.path, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("showing %s: %w", st.path, err)
	}
	return nil
}

// mountPoint makes sure path exists as a directory (dir) or a file, for
// a tree to be mounted on it. It can be missing where a hidden tree was
// emptied.
func mountPoint(path string, dir bool) error {
	if _, err := os.Lstat(path); err == nil {
		return nil
	}
	if dir {
		return os.MkdirAll(path, 0o700)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// setUpDev replaces /dev with a private one: the devices of devNodes
// (copied from the original /dev), a private pseudo-terminal instance
// and shared memory of the run's own.
func setUpDev(devs map[string]int) error {
	if err := unix.Mount("tmpfs", "/dev", "tmpfs", unix.MS_NOSUID, "mode=0755"); err != nil {
		return err
	}
	for _, n := range devNodes {
		fd, ok := devs[n]
		if !ok {
			continue
		}
		p := "/dev/" + n
		if err := mountPoint(p, false); err != nil {
			return err
		}
		err := unix.MoveMount(fd, "", unix.AT_FDCWD, p, unix.MOVE_MOUNT_F_EMPTY_PATH)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	for _, d := range []string{"/dev/pts", "/dev/shm"} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	if err := unix.Mount("devpts", "/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return fmt.Errorf("/dev/pts: %w", err)
	}
	if err := unix.Mount("tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=01777"); err != nil {
		return fmt.Errorf("/dev/shm: %w", err)
	}
	links := map[string]string{
		"/dev/ptmx": "pts/ptmx", "/dev/fd": "/proc/self/fd",
		"/dev/stdin": "/proc/self/fd/0", "/dev/stdout": "/proc/self/fd/1", "/dev/stderr": "/proc/self/fd/2",
	}
	for l, target := range links {
		if err := os.Symlink(target, l); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
	}
	return nil
}
