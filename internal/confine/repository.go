package confine

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Repository shows read-only what git runs of the repository that holds
// the working directory: its configuration (core.hooksPath,
// core.fsmonitor, core.sshCommand, filter and diff drivers, include.path)
// and its hooks directory, created empty where it is missing so that it
// can be shown read-only; the same of its submodules' git directories
// (git status runs in each), and the configuration of each of its
// worktrees. A run writes its work tree and its objects and refs as
// before; the person's next git command in that repository, run outside
// every run, executes nothing the run wrote there. Files of the work tree
// that git is told to run (a core.hooksPath inside it, as husky sets) are
// the project's, which the run edits. A repository the run makes for
// itself is the run's (see postern-run(1)).
//
// The repository is found as git finds it, from s.Dir upwards: a .git
// directory, or a .git file naming the git directory (a worktree, whose
// configuration and hooks are in the common directory). The
// configuration of a Mercurial or Jujutsu repository holding the working
// directory is shown read-only the same way.
func (s *Spec) Repository() {
	s.otherRepositories()
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
	s.ReadOnly = append(s.ReadOnly, gitRuns(common)...)
	s.ReadOnly = append(s.ReadOnly, filepath.Join(gitDir, "config.worktree"))
	worktrees, _ := filepath.Glob(filepath.Join(common, "worktrees", "*", "config.worktree"))
	s.ReadOnly = append(s.ReadOnly, worktrees...)
}

// maxSubmodules bounds the git directories of submodules Repository
// looks at.
const maxSubmodules = 256

// gitRuns returns the configuration and hooks directory of the git
// directory dir and of its submodules' (dir/modules/NAME, nested), making
// each missing hooks directory.
func gitRuns(dir string) []string {
	var out []string
	queue := []string{dir}
	for n := 0; len(queue) > 0 && n < maxSubmodules; n++ {
		d := queue[0]
		queue = queue[1:]
		hooks := filepath.Join(d, "hooks")
		if _, err := os.Lstat(hooks); os.IsNotExist(err) {
			os.Mkdir(hooks, 0o755)
		}
		out = append(out, filepath.Join(d, "config"), hooks)
		// A submodule's name may hold slashes: its git directory is
		// the one with a HEAD, however deep.
		filepath.WalkDir(filepath.Join(d, "modules"), func(p string, e fs.DirEntry, err error) error {
			if err != nil || !e.IsDir() {
				return nil
			}
			if _, err := os.Stat(filepath.Join(p, "HEAD")); err == nil {
				queue = append(queue, p)
				return filepath.SkipDir
			}
			return nil
		})
	}
	return out
}

// findUp returns the first path dir/name, from dir upwards, that exists
// (and whether it is a directory), or "".
func findUp(dir, name string) (string, bool) {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil {
			return p, fi.IsDir()
		}
		if d == filepath.Dir(d) {
			return "", false
		}
	}
}

// findGitDir returns the git directory of the repository holding dir,
// or "" when there is none.
func findGitDir(dir string) string {
	dot, isDir := findUp(dir, ".git")
	if dot == "" || isDir {
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
		g = filepath.Join(filepath.Dir(dot), g)
	}
	return filepath.Clean(g)
}

// otherRepositories shows read-only the configuration of a Mercurial
// (.hg/hgrc: its [hooks] run on the person's next hg command) or
// Jujutsu (.jj/repo/config.toml) repository that holds the working
// directory, made empty first where it is missing.
func (s *Spec) otherRepositories() {
	for _, c := range []struct{ dir, file string }{{".hg", "hgrc"}, {filepath.Join(".jj", "repo"), "config.toml"}} {
		d, isDir := findUp(s.Dir, c.dir)
		if d == "" || !isDir {
			continue
		}
		p := filepath.Join(d, c.file)
		if f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			f.Close()
		}
		s.ReadOnly = append(s.ReadOnly, p)
	}
}
