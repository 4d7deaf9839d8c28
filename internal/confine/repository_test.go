package confine

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

func TestRepository(t *testing.T) {
	root := t.TempDir()
	mk := func(p string) string {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write := func(p, content string) {
		if err := os.WriteFile(filepath.Join(root, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mk("repo/.git")
	mk("repo/src/pkg")
	// A worktree of repo, its git directory in repo's, named relatively;
	// its gitdir file names its .git file.
	mk("repo/.git/worktrees/wt")
	write("repo/.git/worktrees/wt/commondir", "../..\n")
	write("repo/.git/worktrees/wt/gitdir", filepath.Join(root, "wt/.git")+"\n")
	mk("wt/sub")
	write("wt/.git", "gitdir: "+filepath.Join(root, "repo/.git/worktrees/wt")+"\n")
	mk("plain")
	// A repository with submodules, one nested, one named with a slash
	// and no work tree named, and a worktree whose configuration exists.
	// The submodules' git directories name their work trees, whose .git
	// files name them back.
	mk("sup/.git/modules/a/modules/b")
	write("sup/.git/modules/a/HEAD", "ref: refs/heads/main\n")
	write("sup/.git/modules/a/config", "[core]\n\tbare = false\n[Core]\n\tWorkTree = ../../../a\n")
	write("sup/.git/modules/a/modules/b/HEAD", "ref: refs/heads/main\n")
	write("sup/.git/modules/a/modules/b/config", "[core]\n\tworktree = \"../../../../../a/b\"\n")
	mk("sup/a/b")
	write("sup/a/.git", "gitdir: ../.git/modules/a\n")
	write("sup/a/b/.git", "gitdir: ../../.git/modules/a/modules/b\n")
	mk("sup/.git/modules/lib/c")
	write("sup/.git/modules/lib/c/HEAD", "ref: refs/heads/main\n")
	mk("sup/.git/worktrees/w2")
	write("sup/.git/worktrees/w2/config.worktree", "[core]\n")

	worktree := func(repo string, linked ...string) []string {
		out := []string{repo + "/.git/config.worktree"}
		for _, w := range linked {
			a := repo + "/.git/worktrees/" + w
			out = append(out, a+"/config.worktree", a+"/commondir", a+"/gitdir")
			if w == "wt" {
				out = append(out, "wt/.git")
			}
		}
		return out
	}
	cases := []struct {
		dir  string
		want []string
	}{
		{"repo", append([]string{"repo/.git/config", "repo/.git/hooks", "repo/.git/commondir"}, worktree("repo", "wt")...)},
		{"repo/src/pkg", append([]string{"repo/.git/config", "repo/.git/hooks", "repo/.git/commondir"}, worktree("repo", "wt")...)},
		{"wt/sub", append([]string{"repo/.git/config", "repo/.git/hooks", "repo/.git/commondir"}, worktree("repo", "wt")...)},
		{"sup", append([]string{
			"sup/.git/config", "sup/.git/hooks", "sup/.git/commondir",
			"sup/.git/modules/a/config", "sup/.git/modules/a/hooks", "sup/.git/modules/a/commondir", "sup/a/.git",
			"sup/.git/modules/lib/c/config", "sup/.git/modules/lib/c/hooks", "sup/.git/modules/lib/c/commondir",
			"sup/.git/modules/a/modules/b/config", "sup/.git/modules/a/modules/b/hooks", "sup/.git/modules/a/modules/b/commondir", "sup/a/b/.git",
		}, worktree("sup", "w2")...)},
	}
	for _, c := range cases {
		s := &Spec{Dir: filepath.Join(root, c.dir), ReadOnly: []string{"/kept"}}
		if _, err := s.Repository(nil); err != nil {
			t.Fatal(err)
		}
		want := []string{"/kept"}
		for _, w := range c.want {
			want = append(want, filepath.Join(root, w))
		}
		if !slices.Equal(s.ReadOnly, want) {
			t.Errorf("%s: read-only %q, want %q", c.dir, s.ReadOnly, want)
		}
	}
	// The missing per-worktree configurations were made empty; one that
	// existed is kept as it was.
	for p, want := range map[string]string{"repo/.git/config.worktree": "", "repo/.git/worktrees/wt/config.worktree": "", "sup/.git/worktrees/w2/config.worktree": "[core]\n"} {
		if b, err := os.ReadFile(filepath.Join(root, p)); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want %q", p, b, err, want)
		}
	}
	// The missing commondir files were written naming their own git
	// directory; a worktree's is kept as it was.
	for p, want := range map[string]string{"repo/.git/commondir": ".\n", "sup/.git/modules/a/modules/b/commondir": ".\n", "repo/.git/worktrees/wt/commondir": "../..\n"} {
		if b, err := os.ReadFile(filepath.Join(root, p)); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want %q", p, b, err, want)
		}
	}
	// The missing hooks directories were made, empty, so that they can be
	// shown read-only.
	for _, h := range []string{"repo/.git/hooks", "sup/.git/modules/a/modules/b/hooks"} {
		if fi, err := os.Stat(filepath.Join(root, h)); err != nil || !fi.IsDir() {
			t.Fatalf("hooks directory %s: %v", h, err)
		}
	}
	// Outside any repository (as far as the temporary directory's parents
	// go, which hold none in the tests' world), nothing is added.
	if dot, _ := findUp(filepath.Join(root, "plain"), ".git"); dot == "" {
		s := &Spec{Dir: filepath.Join(root, "plain")}
		if _, err := s.Repository(nil); err != nil {
			t.Fatal(err)
		}
		if len(s.ReadOnly) != 0 {
			t.Errorf("outside a repository: %q", s.ReadOnly)
		}
	}
	// A .git file that names nothing is no repository.
	mk("bad")
	write("bad/.git", "not a gitdir line\n")
	if g := gitDirOf(filepath.Join(root, "bad", ".git")); g != "" {
		t.Errorf("a malformed .git file gave %q", g)
	}
}

// A Mercurial or Jujutsu repository's configuration is shown read-only,
// made empty first where it is missing; one that exists is kept as is.
func TestRepositoryOtherSystems(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "hg/.hg", "hg/sub", "jj/.jj/repo", "jj/sub")
	os.WriteFile(filepath.Join(root, "jj/.jj/repo/config.toml"), []byte("[ui]\n"), 0o644)
	for dir, want := range map[string]string{"hg/sub": "hg/.hg/hgrc", "jj/sub": "jj/.jj/repo/config.toml"} {
		s := &Spec{Dir: filepath.Join(root, dir)}
		if _, err := s.Repository(nil); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(s.ReadOnly, filepath.Join(root, want)) {
			t.Errorf("%s: read-only %q lacks %s", dir, s.ReadOnly, want)
		}
		if _, err := os.Stat(filepath.Join(root, want)); err != nil {
			t.Errorf("%s: %v", want, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "jj/.jj/repo/config.toml")); string(b) != "[ui]\n" {
		t.Errorf("an existing configuration was changed: %q", b)
	}
}

// A run writes the working tree: the .git it leaves for the next run's
// start may be a FIFO nobody writes to, or a link to an endless device.
// Neither hangs the next start nor fills its memory: neither names a
// git directory.
func TestGitFileThatIsNoFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo", ".git")
	os.MkdirAll(filepath.Dir(fifo), 0o700)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero", ".git")
	os.MkdirAll(filepath.Dir(zero), 0o700)
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 2)
	go func() { done <- gitDirOf(fifo); done <- gitDirOf(zero) }()
	for range 2 {
		select {
		case g := <-done:
			if g != "" {
				t.Fatalf("a .git that is no file named %q", g)
			}
		case <-time.After(time.Minute):
			t.Fatal("reading a .git that is no file hung")
		}
	}
}

// A submodule the repository's .gitmodules names is protected however
// deep it is, also with its git directory in its own work tree; a path
// that leaves the work tree names nothing.
func TestRepositoryDeepSubmodule(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "repo/.git", "repo/v/x/y/lib/.git", "repo/v/x/y/lib/z/inner/.git", "outside/.git")
	os.WriteFile(filepath.Join(root, "repo/.gitmodules"), []byte("[submodule \"lib\"]\n\tpath = v/x/y/lib\n[submodule \"out\"]\n\tpath = ../outside\n"), 0o644)
	os.WriteFile(filepath.Join(root, "repo/v/x/y/lib/.gitmodules"), []byte("[submodule \"inner\"]\n\tpath = z/inner\n"), 0o644)
	s := &Spec{Dir: filepath.Join(root, "repo")}
	if _, err := s.Repository(nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"repo/v/x/y/lib/.git/config", "repo/v/x/y/lib/.git/hooks", "repo/v/x/y/lib/z/inner/.git/config"} {
		if !slices.Contains(s.ReadOnly, filepath.Join(root, p)) {
			t.Errorf("%s is not read-only: %q", p, s.ReadOnly)
		}
	}
	if slices.Contains(s.ReadOnly, filepath.Join(root, "outside/.git/config")) {
		t.Errorf("a submodule path outside the work tree was followed: %q", s.ReadOnly)
	}
}

// A worktree's gitdir file written relative to its directory (git
// worktree add --relative-paths) names the .git file shown read-only.
func TestRepositoryRelativeWorktree(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "repo/.git/worktrees/rel", "repo/a/b/c/rel")
	os.WriteFile(filepath.Join(root, "repo/.git/worktrees/rel/gitdir"), []byte("../../../a/b/c/rel/.git\n"), 0o644)
	os.WriteFile(filepath.Join(root, "repo/a/b/c/rel/.git"), []byte("gitdir: ../../../../.git/worktrees/rel\n"), 0o644)
	s := &Spec{Dir: filepath.Join(root, "repo")}
	if _, err := s.Repository(nil); err != nil {
		t.Fatal(err)
	}
	if p := filepath.Join(root, "repo/a/b/c/rel/.git"); !slices.Contains(s.ReadOnly, p) {
		t.Errorf("%s is not read-only: %q", p, s.ReadOnly)
	}
}

// A file the person's own git configuration includes inside the working
// directory is shown read-only, made empty first where missing; one
// outside the writable trees is left as the run's view has it.
func TestRepositoryGlobalIncludes(t *testing.T) {
	root := t.TempDir()
	home, work, xdg := filepath.Join(root, "home"), filepath.Join(root, "work"), filepath.Join(root, "xdg")
	mkdirs(t, "", home, work, filepath.Join(xdg, "git"))
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[include]\n\tpath = "+work+"/shared.gitconfig\n\tpath = ~/.other\n"), 0o644)
	os.WriteFile(filepath.Join(xdg, "git", "config"), []byte("[includeIf \"gitdir:~/w/\"]\n\tpath = "+work+"/team/w.gitconfig\n"), 0o644)
	os.MkdirAll(filepath.Join(work, "team"), 0o755)
	s := &Spec{Dir: work}
	if _, err := s.Repository([]string{"HOME=" + home, "XDG_CONFIG_HOME=" + xdg}); err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(work, "shared.gitconfig"), filepath.Join(work, "team", "w.gitconfig")}
	if !slices.Equal(s.ReadOnly, want) {
		t.Fatalf("read-only %q, want %q", s.ReadOnly, want)
	}
	if _, err := os.Stat(want[0]); err != nil {
		t.Errorf("the missing include was not made: %v", err)
	}
}

// mkdirs makes each directory of dirs, joined to root ("" for paths that
// are whole), with its parents.
func mkdirs(t *testing.T, root string, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}
