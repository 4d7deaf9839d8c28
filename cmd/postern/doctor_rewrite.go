package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// effectiveUID is the user doctor checks for (tests change it).
var effectiveUID = os.Geteuid

// rewritableBy says how the user uid could put another file at path: the
// file, or a directory above it, is theirs, or one others may write
// (a directory with the sticky bit aside, whose files only their owners
// may replace); "" when none is. A link is judged by the directory it
// is in, and what it leads to as a path of its own. The gateway pins the
// askpass program it finds at its start and answers cards through it: a
// program of the user's that can rewrite it there has its own pinned at
// the next start.
func rewritableBy(path string, uid uint32) string {
	if why := rewritableChain(path, uid); why != "" {
		return why
	}
	if real, err := filepath.EvalSymlinks(path); err == nil && real != filepath.Clean(path) {
		return rewritableChain(real, uid)
	}
	return ""
}

// rewritableChain is rewritableBy for path and the directories above it,
// as spelt.
func rewritableChain(path string, uid uint32) string {
	p := filepath.Clean(path)
	for {
		fi, err := os.Lstat(p)
		if err != nil {
			return ""
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		link := fi.Mode()&os.ModeSymlink != 0 // no one writes a link: it is replaced
		sticky := fi.IsDir() && fi.Mode()&os.ModeSticky != 0
		switch {
		case link:
		case ok && st.Uid == uid:
			return fmt.Sprintf("%s is yours", p)
		case fi.Mode().Perm()&0o022 != 0 && !sticky:
			return fmt.Sprintf("%s is writable by others than its owner (mode %04o)", p, fi.Mode().Perm())
		}
		parent := filepath.Dir(p)
		if parent == p {
			return ""
		}
		p = parent
	}
}
