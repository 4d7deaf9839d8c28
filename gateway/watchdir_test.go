package gateway

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A program that moves the configuration's directory away, or removes
// it, and makes a new one in its place must not leave the gateway deaf
// to the file: a person's later edit there (a stricter rule) is read as
// any other.
func TestReloadConfigDirReplaced(t *testing.T) {
	for _, c := range []struct {
		name string
		away func(dir string) error
	}{
		{"moved", func(dir string) error { return os.Rename(dir, dir+".old") }},
		{"removed", os.RemoveAll},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, cfg := sessionGateway(t)
			dir := filepath.Dir(cfg)
			if err := c.away(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(cfg, []byte("approval = \"per-call\"\n"), 0o600)
			waitStatus(t, g, "the directory replaced", approvalIs("per-call"))
			// The person's edit, once the watcher has settled.
			time.Sleep(300 * time.Millisecond)
			os.WriteFile(cfg, []byte("approval = \"deny\"\n"), 0o600)
			waitStatus(t, g, "the file in the new directory edited", approvalIs("deny"))
		})
	}
}
