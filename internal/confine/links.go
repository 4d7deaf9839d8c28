package confine

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ErrLinkInWritable reports a path the run must not change that is
// reached through a symbolic link in a tree the run writes. The link
// cannot be shown read-only (nothing mounts on a symbolic link), and the
// run could point it elsewhere: at a repository of its own for a .git
// link, whose configuration the person's next git command would run.
type ErrLinkInWritable struct {
	Path string // what is protected
	Link string // the symbolic link on its way, in a writable tree
}

func (e *ErrLinkInWritable) Error() string {
	what := e.Path
	if what != e.Link {
		what = fmt.Sprintf("%s (through %s)", e.Path, e.Link)
	}
	return fmt.Sprintf("cannot confine the run: %s is reached through a symbolic link in a tree the run writes, which the run could point elsewhere", what)
}

// linkInWritable returns the first symbolic link on the way to p that is
// inside the working directory or a read_write tree (not the tree
// itself, whose parent the run does not write), or "".
func (s *Spec) linkInWritable(p string) string {
	if !filepath.IsAbs(p) {
		return ""
	}
	p = filepath.Clean(p)
	q := "/"
	for _, part := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		q = filepath.Join(q, part)
		if !s.writable(q) || slices.Contains(s.writableTrees(), q) {
			continue
		}
		if fi, err := os.Lstat(q); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return q
		}
	}
	return ""
}

// checkLinks fails with an *ErrLinkInWritable for the first of paths
// reached through a symbolic link in a writable tree.
func (s *Spec) checkLinks(paths ...string) error {
	for _, p := range paths {
		if l := s.linkInWritable(p); l != "" {
			return &ErrLinkInWritable{Path: p, Link: l}
		}
	}
	return nil
}
