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

// A path named through a symbolic link outside the writable trees is
// where it leads: in the working directory, writable, and a link inside
// it on its way is found; a loop of links ends.
func TestWritableThroughALinkOutside(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "work/tools", "real.git", "elsewhere")
	for name, target := range map[string]string{
		"work/.git": "../real.git", "code": "work", "up": "code/../elsewhere",
		"loop1": "loop2", "loop2": "loop1",
	} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	s := &Spec{Dir: filepath.Join(root, "work")}
	for p, want := range map[string]bool{
		"code/x.conf": true, "code/tools/ssh": true, "code": true,
		"up/x": false, "loop1/x": false, "elsewhere": false,
	} {
		if got := s.writable(filepath.Join(root, p)); got != want {
			t.Errorf("writable(%s) = %v, want %v", p, got, want)
		}
	}
	var le *ErrLinkInWritable
	if err := s.checkLinks(filepath.Join(root, "code", ".git", "config")); !errors.As(err, &le) || le.Link != filepath.Join(root, "work", ".git") {
		t.Errorf("a link in the working directory reached through one outside: %v", err)
	}
}
