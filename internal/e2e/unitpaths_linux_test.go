package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// make install puts the systemd user units where the user's service
// manager looks for them, so that "systemctl --user enable --now
// postern", as the README says, finds them: under the default PREFIX
// (/usr/local), and under a PREFIX in the home directory (~/.local),
// whose lib/systemd/user no manager reads.
func TestSystemdUnitsInstalledWhereTheManagerLooks(t *testing.T) {
	need(t, "systemd-analyze")
	e := newEnv(t)
	r := e.Run("systemd-analyze", "--user", "unit-paths")
	if r.Code != 0 {
		t.Fatalf("systemd-analyze --user unit-paths: %s", r)
	}
	paths := strings.Fields(r.Stdout)
	unitDir := func(root string) string {
		var dir string
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Name() == "postern.service" {
				dir = filepath.Dir(p)
			}
			return nil
		})
		return dir
	}

	dest := e.Path("dest")
	makeInstall(t, e, "DESTDIR="+dest)
	if dir := strings.TrimPrefix(unitDir(dest), dest); !slices.Contains(paths, dir) {
		t.Errorf("make install put postern.service in %s, where the user's service manager does not look: it looks in\n%s", dir, r.Stdout)
	}

	prefix := e.Home(".local")
	makeInstall(t, e, "PREFIX="+prefix)
	if dir := unitDir(prefix); !slices.Contains(paths, dir) {
		t.Errorf("make install PREFIX=~/.local put postern.service in %s, where the user's service manager does not look: it looks in\n%s", dir, r.Stdout)
	}
}
