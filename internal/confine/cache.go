package confine

import (
	"fmt"
	"os"
	"path/filepath"
)

// runCache is where, under the person's cache directory, the cache that
// runs share with each other is kept.
const runCache = "postern/run"

// Cache makes the run's cache directory ($XDG_CACHE_HOME, else ~/.cache,
// from env) its own: runCache under it, created 0700, shown writable in
// its place. Programs keep there what they run or trust next time (a
// shell prompt's instant-start script sourced by every new shell, the
// objects a compiler links without checking them again): what a run
// leaves in its cache is read by runs only, never by the person's
// programs. A read_write tree that holds the cache directory, or is
// inside it, shares it as the person chose: then nothing changes.
func (s *Spec) Cache(env []string) error {
	dir := getenv(env, "XDG_CACHE_HOME")
	if !filepath.IsAbs(dir) {
		home := getenv(env, "HOME")
		if !filepath.IsAbs(home) {
			return nil
		}
		dir = filepath.Join(home, ".cache")
	}
	dir = filepath.Clean(dir)
	for _, w := range s.ReadWrite {
		if Under(dir, w) || Under(w, dir) {
			return nil
		}
	}
	from := filepath.Join(dir, runCache)
	if err := os.MkdirAll(from, 0o700); err != nil {
		return fmt.Errorf("cannot confine the run: making its own cache directory: %w", err)
	}
	s.Own = append(s.Own, Own{Path: dir, From: from})
	return nil
}

// ownPaths are the paths where the run's own trees are shown.
func (s *Spec) ownPaths() []string {
	var out []string
	for _, o := range s.Own {
		out = append(out, o.Path)
	}
	return out
}
