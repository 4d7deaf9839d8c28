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
	path := strings.Join([]string{filepath.Join(root, "link-to-bin"), elsewhere, "bin", cacheBin, filepath.Join(root, "missing")}, ":")
	s := &Spec{Dir: work, ReadWrite: []string{cache}, ReadOnly: []string{"/kept"}}
	if err := s.Commands([]string{"PATH=" + path}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"/kept", bin, cacheBin}; !slices.Equal(s.ReadOnly, want) {
		t.Fatalf("read-only %q, want %q", s.ReadOnly, want)
	}
	// A PATH directory not made yet inside the working directory (bin/
	// before the first build) is made empty and read-only; one elsewhere
	// is left alone.
	later, outside := filepath.Join(work, "node_modules", ".bin"), filepath.Join(root, "opt", "bin")
	s = &Spec{Dir: work, ReadWrite: []string{cache}}
	if err := s.Commands([]string{"PATH=" + later + ":" + outside}); err != nil {
		t.Fatal(err)
	}
	if want := []string{later}; !slices.Equal(s.ReadOnly, want) {
		t.Fatalf("read-only %q, want %q", s.ReadOnly, want)
	}
	if fi, err := os.Stat(later); err != nil || !fi.IsDir() {
		t.Fatalf("the missing PATH directory in the working directory: %v", err)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Fatal("a missing PATH directory outside the writable trees was made")
	}
	// The working directory itself on PATH: refused, not made read-only;
	// so too as "." or an empty entry, which name it for the shell that
	// started the run.
	for _, p := range []string{"/usr/bin:" + work, ".:/usr/bin", "/usr/bin:"} {
		s = &Spec{Dir: work}
		if err := s.Commands([]string{"PATH=" + p}); err == nil || !strings.Contains(err.Error(), "is on PATH") {
			t.Fatalf("the working directory on PATH as %q: %v", p, err)
		}
	}
	// A relative entry is a directory of the working directory's.
	s = &Spec{Dir: work}
	if err := s.Commands([]string{"PATH=node_modules/.bin:/usr/bin"}); err != nil || !slices.Equal(s.ReadOnly, []string{later}) {
		t.Fatalf("a relative PATH entry: read-only %q, %v", s.ReadOnly, err)
	}
}
