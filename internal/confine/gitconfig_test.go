package confine

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestReadGitConfig(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config")
	os.WriteFile(p, []byte(`# a comment
[core]
	bare = false
	WorkTree = ../w ; the work tree
[Include]
	path = "a b.inc"
[includeIf "gitdir:~/work/"] path = ~/work.inc
[remote "origin"]
	url = git@example.com:x
[broken
	path = ignored
`), 0o644)
	want := []gitSetting{
		{"core", "bare", "false"},
		{"core", "worktree", "../w"},
		{"include", "path", "a b.inc"},
		{"includeif.gitdir:~/work/", "path", "~/work.inc"},
		{"remote.origin", "url", "git@example.com:x"},
	}
	if got := readGitConfig(p); !slices.Equal(got, want) {
		t.Errorf("read %q\nwant %q", got, want)
	}
	if got := readGitConfig(filepath.Join(t.TempDir(), "missing")); got != nil {
		t.Errorf("a missing file gave %q", got)
	}
}

// Includes are followed from file to file, relative to the including
// file, ~/ from the home directory, each once (a loop ends).
func TestGitIncludes(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	write := func(p, content string) {
		os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
		os.WriteFile(filepath.Join(root, p), []byte(content), 0o644)
	}
	write("repo/.git/config", "[include]\n\tpath = local.inc\n[includeIf \"onbranch:main\"]\n\tpath = ../team.inc\n")
	write("repo/team.inc", "[include]\n\tpath = ~/shared.inc\n")
	write("home/shared.inc", "[include]\n\tpath = "+filepath.Join(root, "repo/team.inc")+"\n")
	got := gitIncludes([]string{filepath.Join(root, "repo/.git/config"), filepath.Join(root, "repo/.git/hooks")}, home)
	want := []string{
		filepath.Join(root, "repo/.git/local.inc"),
		filepath.Join(root, "repo/team.inc"),
		filepath.Join(home, "shared.inc"),
	}
	if !slices.Equal(got, want) {
		t.Errorf("includes %q\nwant %q", got, want)
	}
	// Without a home directory, ~/ names nothing.
	if got := gitIncludes([]string{filepath.Join(root, "repo/team.inc")}, ""); len(got) != 0 {
		t.Errorf("without HOME: %q", got)
	}
}

func FuzzReadGitConfig(f *testing.F) {
	f.Add("[core]\n\tworktree = ../x\n[include \"y\"] path = \"z\n")
	f.Add("[\n=\n\"")
	f.Fuzz(func(t *testing.T, content string) {
		p := filepath.Join(t.TempDir(), "config")
		os.WriteFile(p, []byte(content), 0o644)
		for _, st := range readGitConfig(p) {
			if st.section == "" {
				t.Fatalf("a setting outside any section: %q", st)
			}
		}
	})
}
