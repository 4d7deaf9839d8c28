package confine

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// In a workspace of repositories (the working directory itself none),
// each one down to maxRepoDepth levels is protected, a bare one too;
// node_modules and deeper levels are not searched, and a search cut
// short says so.
func TestNestedRepositories(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "a/.git", "b/c/.git", "x/y/.git", "d1/d2/d3/.git", "node_modules/pkg/.git", "h/.hg", "a/src",
		"r/bare.git/objects", "r/bare.git/refs", "r/bare.git/sub", "notbare/objects", "notbare/refs")
	// A bare repository, pushed to, and a directory that only looks a
	// little like one.
	for _, f := range []string{"r/bare.git/HEAD", "r/bare.git/config", "notbare/HEAD"} {
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := &Spec{Dir: root}
	complete, err := s.Repository(nil)
	if err != nil || !complete {
		t.Fatalf("Repository: %v, complete %v", err, complete)
	}
	for _, p := range []string{"a/.git/config", "a/.git/hooks", "b/c/.git/config", "x/y/.git/hooks", "h/.hg/hgrc", "r/bare.git/config", "r/bare.git/hooks"} {
		if !slices.Contains(s.ReadOnly, filepath.Join(root, p)) {
			t.Errorf("%s is not read-only: %q", p, s.ReadOnly)
		}
	}
	for _, p := range []string{"d1/d2/d3/.git/config", "node_modules/pkg/.git/config", "notbare/config", "notbare/hooks"} {
		if slices.Contains(s.ReadOnly, filepath.Join(root, p)) {
			t.Errorf("%s was searched", p)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "h/.hg/hgrc")); err != nil {
		t.Errorf("the Mercurial configuration was not made: %v", err)
	}
	defer func(n int) { maxRepoDirs = n }(maxRepoDirs)
	maxRepoDirs = 2
	if complete, _ := (&Spec{Dir: root}).Repository(nil); complete {
		t.Error("a search cut short reported complete")
	}
}
