package confine

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A protected path reached through a symbolic link inside a writable
// tree is refused; a link outside the writable trees, or a writable tree
// that is itself a link, is not.
func TestLinkInWritable(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "work/real.git/hooks", "work/tools", "real.git", "elsewhere")
	link := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	link("real.git", "work/.git")
	link("tools", "work/bin")
	link("work", "wlink")
	link("elsewhere", "outside")
	s := &Spec{Dir: filepath.Join(root, "work")}
	for p, want := range map[string]string{
		"work/.git/config":    "work/.git",
		"work/.git/hooks":     "work/.git",
		"work/bin":            "work/bin",
		"work/tools":          "",
		"outside/x":           "",
		"work/real.git/hooks": "",
	} {
		err := s.checkLinks(filepath.Join(root, p))
		var le *ErrLinkInWritable
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", p, err)
		case want != "" && (!errors.As(err, &le) || le.Link != filepath.Join(root, want)):
			t.Errorf("%s: %v, want the link %s named", p, err, want)
		}
	}
	// The working directory itself a link: its parent is not the run's.
	s = &Spec{Dir: filepath.Join(root, "wlink")}
	if err := s.checkLinks(filepath.Join(root, "wlink", "real.git", "config")); err != nil {
		t.Errorf("through the working directory's own link: %v", err)
	}
	// Repository and Commands refuse a linked .git and a linked PATH
	// directory.
	s = &Spec{Dir: filepath.Join(root, "work")}
	if _, err := s.Repository(nil); !errors.As(err, new(*ErrLinkInWritable)) {
		t.Errorf("Repository with a linked .git: %v", err)
	}
	if err := s.Commands([]string{"PATH=/usr/bin:" + filepath.Join(root, "work/bin")}); !errors.As(err, new(*ErrLinkInWritable)) {
		t.Errorf("Commands with a linked PATH directory: %v", err)
	}
}
