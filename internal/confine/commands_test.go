package confine

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestCommands(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	mk := func(p string) string {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	work, cache, bin, cacheBin, elsewhere := mk("work"), mk("cache"), mk("work/bin"), mk("cache/tools/bin"), mk("usr/bin")
	os.Symlink(bin, filepath.Join(root, "link-to-bin"))
	path := strings.Join([]string{filepath.Join(root, "link-to-bin"), elsewhere, ".", "bin", cacheBin, filepath.Join(root, "missing")}, ":")
	s := &Spec{Dir: work, ReadWrite: []string{cache}, ReadOnly: []string{"/kept"}}
	if err := s.Commands([]string{"PATH=" + path}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"/kept", bin, cacheBin}; !slices.Equal(s.ReadOnly, want) {
		t.Fatalf("read-only %q, want %q", s.ReadOnly, want)
	}
	// The working directory itself on PATH: refused, not made read-only.
	s = &Spec{Dir: work}
	if err := s.Commands([]string{"PATH=/usr/bin:" + work}); err == nil || !strings.Contains(err.Error(), "is on PATH") {
		t.Fatalf("the working directory on PATH: %v", err)
	}
}
