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
// itself, whose parent the run does not write), or "". Links outside
// those trees are followed (located).
func (s *Spec) linkInWritable(p string) string {
	if !filepath.IsAbs(p) {
		return ""
	}
	p, trees := s.located(p), s.realTrees()
	q := "/"
	for _, part := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		q = filepath.Join(q, part)
		if !underAny(q, trees) || slices.Contains(trees, q) {
			continue
		}
		if fi, err := os.Lstat(q); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return q
		}
	}
	return ""
}

// maxLinkHops bounds the symbolic links located follows, as the kernel
// bounds them (ELOOP).
const maxLinkHops = 40

// located returns where p leads, as the person's programs outside the
// run reach it: each symbolic link on its way that lies outside the
// trees the run writes is replaced by what it names, up to the first
// element inside such a tree, from which p is kept as spelled (a link
// there is the run's to point elsewhere: linkInWritable). A path the
// person's configuration names through a link (~/code/proj/x, ~/code
// leading to the working directory) is then compared with the trees as
// the file it is.
func (s *Spec) located(p string) string {
	if !filepath.IsAbs(p) {
		return p
	}
	trees := s.realTrees()
	split := func(p string) []string {
		return strings.FieldsFunc(p, func(r rune) bool { return r == '/' })
	}
	q, rest := "/", split(filepath.Clean(p))
	for hops := 0; len(rest) > 0 && !underAny(q, trees); {
		next := filepath.Join(q, rest[0])
		fi, err := os.Lstat(next)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 || hops >= maxLinkHops {
			q, rest = next, rest[1:]
			continue
		}
		target, err := os.Readlink(next)
		if err != nil {
			q, rest = next, rest[1:]
			continue
		}
		hops++
		if !filepath.IsAbs(target) {
			target = filepath.Join(q, target)
		}
		// q holds no link: ".." in the target is taken lexically, as
		// the kernel takes it.
		q, rest = "/", append(split(filepath.Clean(target)), rest[1:]...)
	}
	return filepath.Join(append([]string{q}, rest...)...)
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
