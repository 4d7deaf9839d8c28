package confine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Commands shows read-only the directories of the person's $PATH (from
// env) that are inside the run's working directory or a writable tree,
// such as a checkout's bin/ put first on PATH: a program the run wrote
// there as "ssh" or "git" would be what the person's shell runs next,
// outside every run. Relative entries (".") are left out: they name
// whatever directory a shell is in. It runs after Resolve, and fails
// when the working directory itself is on PATH, which a run cannot work
// in read-only. A missing PATH directory inside a writable tree is made
// empty first, as the run could otherwise make it and fill it. A PATH
// directory reached through a symbolic link in a writable tree fails it
// with an [*ErrLinkInWritable]: the run could point the link at a
// directory of its own.
func (s *Spec) Commands(env []string) error {
	for d := range strings.SplitSeq(getenv(env, "PATH"), ":") {
		if !filepath.IsAbs(d) {
			continue
		}
		d = filepath.Clean(d)
		if err := s.checkLinks(d); err != nil {
			return err
		}
		r, err := filepath.EvalSymlinks(d)
		if err != nil && s.writable(d) {
			// Not there yet, in a writable tree (bin/ before the first
			// build): made, empty, so that the run cannot make it.
			if os.MkdirAll(d, 0o755) == nil {
				r, err = filepath.EvalSymlinks(d)
			}
		}
		if err != nil {
			continue // not there: nothing to run from it
		}
		d = r
		if d == s.Dir {
			return fmt.Errorf("cannot confine the run: its working directory %s is on PATH, where a program the run writes would be run outside it; start it from another directory", d)
		}
		if s.writable(d) {
			s.ReadOnly = append(s.ReadOnly, d)
		}
	}
	return nil
}
