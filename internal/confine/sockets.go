package confine

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// HideSockets hides every unix socket bound to a path (as the kernel
// lists them in /proc/net/unix) that the run could reach only as the
// person: one the user owns, or one whose mode does not let every user
// connect (docker.sock, root's and the docker group's). Pathname sockets
// do not care for the run's namespaces or a read-only mount: an ssh
// ControlMaster socket outside ~/.ssh would open sessions on a host with
// no card, docker's would start a container that writes the person's
// files, an editor's RPC socket would run commands in the person's
// editor. Sockets everyone may connect to (journald's, the system bus,
// systemd-resolved's) stay, as do those under s.Sockets, which the run
// is given, and a socket named itself in s.ReadWrite or s.ReadOnly (the
// person's choice, in postern.toml). A socket bound through a symbolic
// link in a hidden tree (/tmp, the runtime directory) is looked for
// where the link leads, which the run may see. A socket bound after the run starts
// is not hidden (postern-run(1) says so). Past the bounds of what it
// searches (maxSockets) it returns an error: the run is not to start.
// It runs after Session and Cache, whose hidden and own trees it need
// not search, and before Resolve.
func (s *Spec) HideSockets() error {
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		return err
	}
	defer f.Close()
	hide, err := s.personalSockets(f, os.Getuid())
	if err != nil {
		return err
	}
	s.Hide = append(s.Hide, hide...)
	return nil
}

// maxSockets bounds the sockets bound to a path that HideSockets looks
// at (the listing's other lines, unnamed and abstract sockets, cost a
// line each and are not counted), maxSocketDirs the directories it
// searches and maxSocketDirEntries the entries of each, so that sockets
// bound by the thousand cost a run's start a bounded time. Past any of
// them it cannot tell which sockets to hide, and the run is not
// confined at all (an error), rather than confined with some of the
// person's sockets in its reach: a program can bind sockets by the
// thousand to push one out of sight.
var (
	maxSockets          = 16384
	maxSocketDirs       = 1024
	maxSocketDirEntries = 8192
)

// personalSockets returns the sockets of the /proc/net/unix listing r
// that HideSockets hides for the user uid. The listing has the path a
// socket was bound to, which may since have been renamed (ssh binds its
// ControlMaster socket to a temporary name and links it into place), so
// each directory that held a listed socket is searched for sockets.
func (s *Spec) personalSockets(r io.Reader, uid int) ([]string, error) {
	var out []string
	dirs := map[string]bool{}
	search := func(p string) error {
		// The directory as the socket was bound to it, and where it
		// leads: one bound through a link in a hidden tree (/tmp, the
		// runtime directory) may be in a tree the run sees.
		d := filepath.Dir(filepath.Clean(p))
		r := d
		if l, err := filepath.EvalSymlinks(d); err == nil {
			r = l
		}
		given := func(d string) bool {
			return slices.ContainsFunc(s.Sockets, func(g string) bool { return filepath.IsAbs(g) && Under(d, filepath.Clean(g)) })
		}
		if dirs[d] || !s.shown(d) && !s.shown(r) || given(d) || given(r) {
			return nil
		}
		if len(dirs) >= maxSocketDirs {
			return fmt.Errorf("sockets are bound in more than %d directories (/proc/net/unix), too many to search for those only you may use", maxSocketDirs)
		}
		dirs[d] = true
		in, err := s.personalIn(d, uid)
		out = append(out, in...)
		return err
	}
	// Sockets bound to a path relative to the binder's working directory,
	// by inode.
	relative := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Scan() // the header
	for named := 0; sc.Scan(); {
		// Num RefCount Protocol Flags Type St Inode Path: the path, when
		// there is one, is the rest of the line.
		f := strings.Fields(sc.Text())
		if len(f) < 8 || strings.HasPrefix(f[7], "@") {
			continue
		}
		p := strings.Join(f[7:], " ")
		if named++; named > maxSockets {
			return nil, fmt.Errorf("more than %d sockets are bound to paths (/proc/net/unix), too many to tell which of them only you may use", maxSockets)
		}
		if !filepath.IsAbs(p) {
			relative[f[6]] = p
			continue
		}
		if err := search(p); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading /proc/net/unix: %w", err)
	}
	for _, p := range boundRelative(relative) {
		if err := search(p); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// boundRelative returns where the sockets of relative (a path relative
// to the working directory of the program that bound it, by the
// socket's inode) are: each joined to the working directory of a
// process of the person's that holds it, the process that bound it or
// one that inherited it, most often in the directory it bound it in.
// (One that changed its directory since is not found.) Of each process
// it reads at most maxSocketDirEntries descriptors.
func boundRelative(relative map[string]string) []string {
	if len(relative) == 0 {
		return nil
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []string
	for _, pe := range procs {
		pid := pe.Name()
		if pid[0] < '0' || pid[0] > '9' {
			continue
		}
		fdDir := "/proc/" + pid + "/fd"
		f, err := os.Open(fdDir)
		if err != nil {
			continue
		}
		fds, _ := f.Readdirnames(maxSocketDirEntries)
		f.Close()
		cwd := ""
		for _, fd := range fds {
			l, err := os.Readlink(fdDir + "/" + fd)
			ino, ok := strings.CutPrefix(l, "socket:[")
			if err != nil || !ok {
				continue
			}
			rel, ok := relative[strings.TrimSuffix(ino, "]")]
			if !ok {
				continue
			}
			if cwd == "" {
				if cwd, err = os.Readlink("/proc/" + pid + "/cwd"); err != nil || !filepath.IsAbs(cwd) {
					break
				}
			}
			out = append(out, filepath.Join(cwd, rel))
		}
	}
	return out
}

// personalIn returns the sockets in directory d that the user uid could
// reach only as the person: owned by uid, or not open to every user. A
// socket named itself in s.ReadWrite or s.ReadOnly is shown as named.
func (s *Spec) personalIn(d string, uid int) ([]string, error) {
	// O_DIRECTORY: what is there now may be a FIFO, whose open would
	// wait for a writer.
	f, err := os.OpenFile(d, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	names, _ := f.Readdirnames(maxSocketDirEntries + 1)
	if len(names) > maxSocketDirEntries {
		return nil, fmt.Errorf("the directory %s, where a socket was bound, holds more than %d entries, too many to search for sockets only you may use", d, maxSocketDirEntries)
	}
	slices.Sort(names)
	var out []string
	for _, name := range names {
		p := filepath.Join(d, name)
		if slices.Contains(s.ReadWrite, p) || slices.Contains(s.ReadOnly, p) {
			continue
		}
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode().Type() != os.ModeSocket {
			continue
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if ok && (int(st.Uid) == uid || fi.Mode().Perm()&0o002 == 0) {
			out = append(out, p)
		}
	}
	return out, nil
}

// shown reports whether directory d, as spelled, is visible to the run
// as s stands:
// not inside a hidden tree (or /tmp, always private), or inside a tree
// shown deeper than that. The sockets of a hidden directory need no
// hiding.
func (s *Spec) shown(d string) bool {
	deepest := func(trees []string) int {
		n := -1
		for _, t := range trees {
			if filepath.IsAbs(t) && Under(d, filepath.Clean(t)) {
				n = max(n, len(filepath.Clean(t)))
			}
		}
		return n
	}
	hidden := deepest(append([]string{"/tmp"}, s.Hide...))
	return hidden < 0 || deepest(append(s.writableTrees(), append(s.ReadOnly, s.ownPaths()...)...)) >= hidden
}
