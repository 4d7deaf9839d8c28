package gateway

import (
	"os"
	"path/filepath"
	"testing"
)

// A directory on the way to the configuration file that is a symbolic
// link (as when ~/.config leads into a dotfiles checkout) is followed
// too: a link that now leads elsewhere is noticed, and so are edits of the
// file it now leads to.
func TestReloadFollowsDirectoryLinks(t *testing.T) {
	var home, a, b string
	g, _ := startGatewayWith(t, func(dir string) {
		home = filepath.Dir(filepath.Dir(configFile(t, dir)))
		a, b = filepath.Join(dir, "a"), filepath.Join(dir, "b")
		for d, s := range map[string]string{a: "session", b: "per-call"} {
			os.MkdirAll(filepath.Join(d, "postern"), 0o700)
			os.WriteFile(filepath.Join(d, "postern", "config.toml"), []byte("approval = \""+s+"\"\n"), 0o600)
		}
		os.RemoveAll(home)
		if err := os.Symlink(a, home); err != nil {
			t.Fatal(err)
		}
	})
	waitStatus(t, g, "at start", approvalIs("session"))
	tmp := home + ".new"
	if err := os.Symlink(b, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, home); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, g, "the directory link retargeted", approvalIs("per-call"))
	os.WriteFile(filepath.Join(b, "postern", "config.toml"), []byte("approval = \"deny\"\n"), 0o600)
	waitStatus(t, g, "the file the link now leads to edited", approvalIs("deny"))
}
