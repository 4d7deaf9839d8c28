package confine

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
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

// gitSettings returns the settings git reads from the configuration
// file at p, in sections (section and key lower-cased, a subsection as
// written), or false when git refuses the file.
func gitSettings(git, p string) ([]gitSetting, bool) {
	out, err := exec.Command(git, "config", "--file", p, "--null", "--list").Output()
	if err != nil {
		return nil, false
	}
	var sts []gitSetting
	for e := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if e == "" {
			continue
		}
		name, value, _ := strings.Cut(e, "\n")
		if i := strings.LastIndexByte(name, '.'); i >= 0 { // git also lists a key before any section, which names nothing
			sts = append(sts, gitSetting{name[:i], name[i+1:], value})
		}
	}
	return sts, true
}

// FuzzReadGitConfig reads a git configuration file, which a run may
// have written or found, and compares it with git's own reading: every
// setting git reads, readGitConfig reads the same, so that no file git
// includes is missed.
func FuzzReadGitConfig(f *testing.F) {
	for _, s := range []string{
		"[core]\n\tworktree = ../x\n[include \"y\"] path = \"z\n",
		"[\n=\n\"",
		"[include]\n\tpath = a.inc\n[includeIf \"gitdir:~/work/\"]\n\tpath = ~/work.inc ; comment\n",
		"[include]\n\tpath = foo\\\nbar\n",
		"[include]\n\tpath = \"a\\\"b\"\n",
		"[include]\n\tpath = x\"y z\"w ; c\n",
		"[InClUdE]\n\tPATH = p\\tq\n",
		"[include]path=inline\n[includeIf.onbranch:main]path=old-style\n",
		"[includeIf \"gitdir:/a\\\"b/\"]\n\tpath = q\n",
		"[include]\r\n\tpath = crlf\r\n",
		"[submodule \"m\"]\n\tpath = sub\n\turl = ../m.git\n[core]\n\tbare\n",
		"# c\n; c\n[include] ; c\npath = \"  spaced  \" # x\n",
	} {
		f.Add(s)
	}
	git, err := exec.LookPath("git")
	if err != nil {
		f.Fatal("git, which the files are compared with, is not installed; .ci/run installs it")
	}
	f.Fuzz(func(t *testing.T, content string) {
		p := filepath.Join(t.TempDir(), "config")
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		got := readGitConfig(p)
		for _, st := range got {
			if st.section == "" {
				t.Fatalf("a setting outside any section: %q", st)
			}
		}
		want, ok := gitSettings(git, p)
		if ok && !slices.Equal(got, want) {
			t.Fatalf("%q: read as\n%q\ngit reads\n%q", content, got, want)
		}
	})
}
