package confine

import (
	"fmt"
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
// in read-only.
func (s *Spec) Commands(env []string) error {
	writable := append([]string{s.Dir}, s.ReadWrite...)
	for d := range strings.SplitSeq(getenv(env, "PATH"), ":") {
		if !filepath.IsAbs(d) {
			continue
		}
		if r, err := filepath.EvalSymlinks(d); err == nil {
			d = r
		} else {
			continue // not there: nothing to run from it
		}
		if d == s.Dir {
			return fmt.Errorf("cannot confine the run: its working directory %s is on PATH, where a program the run writes would be run outside it; start it from another directory", d)
		}
		for _, w := range writable {
			if Under(d, w) {
				s.ReadOnly = append(s.ReadOnly, d)
				break
			}
		}
	}
	return nil
}
