package e2e

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// repoCopy copies the repository's files (those git tracks, and the new
// ones it does not ignore) into a directory of the test and returns it,
// for the tests that run make as the README says: make builds into
// bin/, and the repository stays as the person left it (a gateway the
// person started with "make agent" runs bin/postern).
func repoCopy(t *testing.T) string {
	t.Helper()
	need(t, "git")
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "-C", repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("listing the repository's files: %v", err)
	}
	dst := t.TempDir()
	for _, name := range bytes.Split(bytes.TrimSuffix(out, []byte{0}), []byte{0}) {
		src := filepath.Join(repo, string(name))
		fi, err := os.Lstat(src)
		if err != nil || !fi.Mode().IsRegular() {
			continue // deleted from the work tree, or not a file
		}
		b, err := os.ReadFile(src)
		if err == nil {
			err = os.MkdirAll(filepath.Dir(filepath.Join(dst, string(name))), 0o755)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(dst, string(name)), b, fi.Mode().Perm())
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// keepRepoBin fails the test when, by its end, anything under the
// repository's bin/ changed.
func keepRepoBin(t *testing.T) {
	t.Helper()
	bin, err := filepath.Abs("../../bin")
	if err != nil {
		t.Fatal(err)
	}
	state := func() string {
		var b bytes.Buffer
		filepath.WalkDir(bin, func(p string, d fs.DirEntry, err error) error {
			if fi, err := os.Lstat(p); err == nil {
				fmt.Fprintf(&b, "%s %d %v\n", p, fi.Size(), fi.ModTime())
			}
			return nil
		})
		return b.String()
	}
	before := state()
	t.Cleanup(func() {
		if after := state(); after != before {
			t.Errorf("the test changed the repository's bin/:\nbefore:\n%safter:\n%s", before, after)
		}
	})
}
