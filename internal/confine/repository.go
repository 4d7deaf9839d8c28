package confine

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/postern/postern/internal/smallfile"
)

// Repository shows read-only what git runs of the repository that holds
// the working directory: its configuration (core.hooksPath,
// core.fsmonitor, core.sshCommand, filter and diff drivers, include.path)
// and its hooks directory, created empty where it is missing so that it
// can be shown read-only, and its commondir file, written naming the
// git directory itself where it is missing; the same of its submodules'
// git directories (git status runs in each), and the configuration of
// each of its worktrees, and the files these include (include.path and
// includeIf's path, inside the work tree or not). What tells git where a
// repository is goes with it: the commondir files, the .git file of a
// worktree or submodule, and a worktree's gitdir file; pointed at a
// repository of the run's, they would make the person's git run its
// configuration. The files the person's own git configuration includes
// in a tree the run writes are shown read-only too, wherever the run
// works (globalIncludes). A run writes its work tree and its objects and
// refs as before; the person's next git command in that repository, run
// outside every run, executes nothing the run wrote there. Files of the
// work tree that git is told to run (a core.hooksPath inside it, as
// husky sets) are the project's, which the run edits. A repository the run makes for itself is the
// run's (see postern-run(1)).
//
// The repository is found as git finds it, from s.Dir upwards: a .git
// directory, or a .git file naming the git directory (a worktree, whose
// configuration and hooks are in the common directory). The repositories
// inside the working directory and the read_write trees (clones side by
// side in a workspace, a clone inside a project, a bare repository) are
// protected the same way (their search: nested.go); complete is false
// when that search stopped at maxRepoDirs directories. The configuration of a
// Mercurial or Jujutsu repository holding the working directory, or
// inside it, is shown read-only the same way. Repository fails with an
// [*ErrLinkInWritable] when any of this is reached through a symbolic
// link in a tree the run writes.
func (s *Spec) Repository(env []string) (complete bool, err error) {
	home := getenv(env, "HOME")
	s.otherRepositories()
	var dots []string
	if dot, _ := findUp(s.Dir, ".git"); dot != "" {
		dots = append(dots, dot)
	}
	nested, other, complete := s.nestedRepositories()
	dots = submodules(append(dots, nested...))
	for _, c := range other {
		if !slices.Contains(s.ReadOnly, c) {
			s.ReadOnly = append(s.ReadOnly, touch(c))
		}
	}
	seen := map[string]bool{}
	for _, dot := range dots {
		if err := s.protectGit(dot, home, seen); err != nil {
			return complete, err
		}
	}
	return complete, s.globalIncludes(env, home)
}

// globalIncludes shows read-only the files that the person's own git
// configuration (~/.gitconfig, git/config in XDG_CONFIG_HOME, the
// system's) includes inside the working directory or a writable tree,
// made empty first where missing: every git command of the person's,
// in any repository, reads them. Included files elsewhere are left as
// the run's view has them (hidden or read-only already).
func (s *Spec) globalIncludes(env []string, home string) error {
	var configs []string
	if g := getenv(env, "GIT_CONFIG_GLOBAL"); g != "" {
		configs = append(configs, g)
	} else if home != "" {
		configs = append(configs, filepath.Join(home, ".gitconfig"))
	}
	if x := getenv(env, "XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		configs = append(configs, filepath.Join(x, "git", "config"))
	} else if home != "" {
		configs = append(configs, filepath.Join(home, ".config", "git", "config"))
	}
	configs = append(configs, "/etc/gitconfig")
	var files []string
	for _, inc := range gitIncludes(configs, home) {
		if s.writable(inc) && !slices.Contains(s.ReadOnly, inc) {
			files = append(files, touch(inc))
		}
	}
	if err := s.checkLinks(files...); err != nil {
		return err
	}
	s.ReadOnly = append(s.ReadOnly, files...)
	return nil
}

// protectGit shows read-only what git runs of the repository whose .git
// is dot (see Repository). seen holds the common git directories already
// done: a second worktree of one adds only its .git file.
func (s *Spec) protectGit(dot, home string, seen map[string]bool) error {
	gitDir := gitDirOf(dot)
	if gitDir == "" {
		return nil
	}
	common := gitDir
	if b, err := smallfile.Read(filepath.Join(gitDir, "commondir"), maxGitFile); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		common = filepath.Clean(c)
	}
	var files []string
	if !seen[common] {
		runs, dirs := gitRuns(common)
		for _, d := range dirs {
			seen[d] = true // the submodules' too, whose work trees the search finds
		}
		files = append(runs, worktrees(common)...)
		for _, inc := range gitIncludes(files, home) {
			if s.writable(inc) {
				// Missing, the run could write it.
				touch(inc)
			}
			files = append(files, inc)
		}
	}
	if dot != gitDir && !slices.Contains(files, dot) && !slices.Contains(s.ReadOnly, dot) {
		// A .git file its worktree's gitdir does not name.
		files = append(files, dot)
	}
	// A symbolic link on the way (a .git link, a repo tool's linked
	// config) is not what is shown read-only: the run could retarget it.
	if err := s.checkLinks(append([]string{dot}, files...)...); err != nil {
		return err
	}
	s.ReadOnly = append(s.ReadOnly, files...)
	return nil
}

// submodules returns dots followed by the .git entries of the
// submodules that the .gitmodules of each one's work tree names, and of
// theirs, however deep: the person's git status runs each submodule's
// configuration, also where its git directory is in its own work tree
// (git submodule add of a repository already there) rather than in the
// holding repository's modules, and deeper than the search for
// repositories goes.
func submodules(dots []string) []string {
	out := slices.Clone(dots)
	seen := map[string]bool{}
	for _, d := range out {
		seen[d] = true
	}
	for i := 0; i < len(out) && len(out) < len(dots)+maxSubmodules; i++ {
		top := filepath.Dir(out[i])
		for _, st := range readGitConfig(filepath.Join(top, ".gitmodules")) {
			if st.key != "path" || !strings.HasPrefix(st.section, "submodule.") {
				continue
			}
			dot := filepath.Join(top, st.value, ".git")
			if seen[dot] || !Under(dot, top) {
				continue
			}
			if _, err := os.Lstat(dot); err != nil {
				continue
			}
			seen[dot] = true
			out = append(out, dot)
		}
	}
	return out
}

// maxSubmodules bounds the git directories of submodules Repository
// looks at, and maxWorktrees the worktrees.
const (
	maxSubmodules = 256
	maxWorktrees  = 256
)

// gitRuns returns the configuration and hooks directory of the git
// directory dir and of its submodules' (dir/modules/NAME, nested), making
// each missing hooks directory, and each submodule's .git file; and the
// git directories it looked at.
func gitRuns(dir string) (out, dirs []string) {
	queue := []string{dir}
	for n := 0; len(queue) > 0 && n < maxSubmodules; n++ {
		d := queue[0]
		queue = queue[1:]
		dirs = append(dirs, d)
		hooks := filepath.Join(d, "hooks")
		if _, err := os.Lstat(hooks); os.IsNotExist(err) {
			os.Mkdir(hooks, 0o755)
		}
		out = append(out, filepath.Join(d, "config"), hooks, ownCommonDir(d))
		if w := coreWorktree(filepath.Join(d, "config")); n > 0 && w != "" {
			out = append(out, regularFile(filepath.Join(w, ".git"))...)
		}
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
	return out, dirs
}

// ownCommonDir returns the commondir file of the git directory d,
// written first where it is missing to name d itself ("."), which
// leaves git where it was. Git takes the configuration and hooks of
// any git directory, not only a worktree's, from the directory its
// commondir names: written by the run, it would point the person's next
// git command at a configuration of the run's.
func ownCommonDir(d string) string {
	p := filepath.Join(d, "commondir")
	if _, err := os.Lstat(p); !os.IsNotExist(err) {
		return p
	}
	// Written aside and linked in place, so that git never reads it
	// empty (an empty commondir stops every git command).
	if f, err := os.CreateTemp(d, ".commondir-*"); err == nil {
		_, werr := f.WriteString(".\n")
		if f.Close() == nil && werr == nil {
			os.Link(f.Name(), p)
		}
		os.Remove(f.Name())
	}
	return p
}

// worktrees returns the per-worktree configuration of the main worktree
// and of each linked one (common/worktrees/NAME), made empty where it is
// missing: with extensions.worktreeConfig on, git reads it, and the run
// could otherwise create it. For each linked worktree it also returns the
// files that tie it to its repository: commondir, gitdir, and the .git
// file in the worktree that gitdir names (absolute, or relative to the
// worktree's directory in common).
func worktrees(common string) []string {
	out := []string{touch(filepath.Join(common, "config.worktree"))}
	admin, _ := filepath.Glob(filepath.Join(common, "worktrees", "*"))
	for _, a := range admin[:min(len(admin), maxWorktrees)] {
		if fi, err := os.Lstat(a); err != nil || !fi.IsDir() {
			continue
		}
		out = append(out, touch(filepath.Join(a, "config.worktree")), filepath.Join(a, "commondir"), filepath.Join(a, "gitdir"))
		if b, err := smallfile.Read(filepath.Join(a, "gitdir"), maxGitFile); err == nil {
			if p := strings.TrimSpace(string(b)); p != "" {
				if !filepath.IsAbs(p) {
					// Relative to the worktree's own directory, as
					// worktree.useRelativePaths writes it.
					p = filepath.Join(a, p)
				}
				out = append(out, regularFile(p)...)
			}
		}
	}
	return out
}

// regularFile returns p when it is a regular file: a .git file naming
// a git directory (a .git directory is pinned as the parent of what is
// shown read-only inside it).
func regularFile(p string) []string {
	if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
		return []string{p}
	}
	return nil
}

// coreWorktree returns the work tree that the git configuration file at
// config names in core.worktree (as a submodule's git directory names
// its work tree), resolved against the git directory, or "".
func coreWorktree(config string) string {
	w := ""
	for _, st := range readGitConfig(config) {
		if st.section == "core" && st.key == "worktree" {
			w = gitPath(config, st.value, "")
		}
	}
	return w
}

// touch creates the file p empty when it is missing, and returns p.
func touch(p string) string {
	if f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		f.Close()
	}
	return p
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

// gitDirOf returns the git directory that the .git at dot is (a
// directory) or names (a "gitdir:" file), or "".
func gitDirOf(dot string) string {
	fi, err := os.Stat(dot)
	if err != nil {
		return ""
	}
	if fi.IsDir() {
		return dot
	}
	b, err := smallfile.Read(dot, maxGitFile)
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

// otherVCS are the Mercurial and Jujutsu repositories' configuration
// files (.hg/hgrc: its [hooks] run on the person's next hg command;
// .jj/repo/config.toml), by the directory that holds each.
var otherVCS = []struct{ dir, file string }{{".hg", "hgrc"}, {filepath.Join(".jj", "repo"), "config.toml"}}

// otherConfigAt returns the configuration file of the Mercurial or
// Jujutsu repository whose directory (.hg, .jj) is parent/name, or "".
func otherConfigAt(parent, name string) string {
	for _, c := range otherVCS {
		if first, _, _ := strings.Cut(c.dir, "/"); name != first {
			continue
		}
		if fi, err := os.Stat(filepath.Join(parent, c.dir)); err == nil && fi.IsDir() {
			return filepath.Join(parent, c.dir, c.file)
		}
	}
	return ""
}

// otherRepositories shows read-only the configuration of a Mercurial or
// Jujutsu repository that holds the working directory, made empty first
// where it is missing.
func (s *Spec) otherRepositories() {
	for _, c := range otherVCS {
		d, isDir := findUp(s.Dir, c.dir)
		if d == "" || !isDir {
			continue
		}
		s.ReadOnly = append(s.ReadOnly, touch(filepath.Join(d, c.file)))
	}
}
