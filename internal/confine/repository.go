package confine

import (
	"os"
	"path/filepath"
	"strings"
)

// Repository shows read-only what git runs of the repository that holds
// the working directory: its configuration (core.hooksPath,
// core.fsmonitor, core.sshCommand, filter and diff drivers, include.path)
// and its hooks directory, created empty where it is missing so that it
// can be shown read-only. A run writes its work tree and its objects and
// refs as before; the person's next git command in that repository, run
// outside every run, executes nothing the run wrote. A repository the run
// makes for itself is the run's (see postern-run(1)).
//
// The repository is found as git finds it, from s.Dir upwards: a .git
// directory, or a .git file naming the git directory (a worktree, whose
// configuration and hooks are in the common directory).
func (s *Spec) Repository() {
	gitDir := findGitDir(s.Dir)
	if gitDir == "" {
		return
	}
	common := gitDir
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		common = filepath.Clean(c)
	}
	hooks := filepath.Join(common, "hooks")
	if _, err := os.Lstat(hooks); os.IsNotExist(err) {
		os.Mkdir(hooks, 0o755)
	}
	s.ReadOnly = append(s.ReadOnly, filepath.Join(common, "config"), hooks, filepath.Join(gitDir, "config.worktree"))
}

// findGitDir returns the git directory of the repository holding dir,
// or "" when there is none.
func findGitDir(dir string) string {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		dot := filepath.Join(d, ".git")
		if fi, err := os.Stat(dot); err == nil {
			if fi.IsDir() {
				return dot
			}
			b, err := os.ReadFile(dot)
			if err != nil {
				return ""
			}
			g, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
			if !ok {
				return ""
			}
			g = strings.TrimSpace(g)
			if !filepath.IsAbs(g) {
				g = filepath.Join(d, g)
			}
			return filepath.Clean(g)
		}
		if d == filepath.Dir(d) {
			return ""
		}
	}
}
