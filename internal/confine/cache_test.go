package confine

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestCache(t *testing.T) {
	home := t.TempDir()
	xdg := filepath.Join(t.TempDir(), "cache")
	cases := []struct {
		name      string
		env       []string
		readWrite []string
		want      []Own
	}{
		{"~/.cache", []string{"HOME=" + home}, nil, []Own{{filepath.Join(home, ".cache"), filepath.Join(home, ".cache", runCache)}}},
		{"$XDG_CACHE_HOME", []string{"HOME=" + home, "XDG_CACHE_HOME=" + xdg}, nil, []Own{{xdg, filepath.Join(xdg, runCache)}}},
		{"a relative $XDG_CACHE_HOME is not one", []string{"HOME=" + home, "XDG_CACHE_HOME=cache"}, nil, []Own{{filepath.Join(home, ".cache"), filepath.Join(home, ".cache", runCache)}}},
		{"shared by read_write", []string{"HOME=" + home}, []string{filepath.Join(home, ".cache")}, nil},
		{"a read_write tree inside it", []string{"HOME=" + home}, []string{filepath.Join(home, ".cache", "go-build")}, nil},
		{"no home", nil, nil, nil},
	}
	for _, c := range cases {
		s := &Spec{ReadWrite: c.readWrite}
		if err := s.Cache(c.env); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !slices.Equal(s.Own, c.want) {
			t.Errorf("%s: own %+v, want %+v", c.name, s.Own, c.want)
		}
		for _, o := range s.Own {
			if fi, err := os.Stat(o.From); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
				t.Errorf("%s: %s: %v %v", c.name, o.From, fi.Mode(), err)
			}
		}
	}
}
