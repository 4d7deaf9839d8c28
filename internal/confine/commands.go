package confine

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Commands shows read-only the directories of the person's $PATH (from
// env) that are inside the run's working directory or a writable tree,
// such as a checkout's bin/ put first on PATH: a program the run wrote
// there as "ssh" or "git" would be what the person's shell runs next,
// outside every run. A relative entry (".", an empty one, bin or
// node_modules/.bin) names a directory of whatever directory a shell is
// in: it is taken from the working directory, where the shell that
// started the run is, and its next command too. It runs after Resolve,
// and fails when the working directory itself is on PATH, which a run
// cannot work in read-only. A missing PATH directory inside a writable tree is made
// empty first, as the run could otherwise make it and fill it. A PATH
// directory reached through a symbolic link in a writable tree fails it
// with an [*ErrLinkInWritable]: the run could point the link at a
// directory of its own.
func (s *Spec) Commands(env []string) error {
	for entry := range strings.SplitSeq(getenv(env, "PATH"), ":") {
		d := entry
		if !filepath.IsAbs(d) {
			d = filepath.Join(s.Dir, d)
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
			as, hint := "", "start it from another directory"
			switch {
			case entry == "":
				as, hint = " (as an empty entry)", "take the empty entry out of PATH"
			case !filepath.IsAbs(entry):
				as, hint = fmt.Sprintf(" (as %q)", entry), fmt.Sprintf("take %q out of PATH", entry)
			}
			return fmt.Errorf("cannot confine the run: its working directory %s is on PATH%s, where a program the run writes would be run outside it; %s", d, as, hint)
		}
		if s.writable(d) && !slices.Contains(s.ReadOnly, d) {
			s.ReadOnly = append(s.ReadOnly, d)
		}
	}
	return nil
}
