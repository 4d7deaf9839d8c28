package gateway

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/postern/postern/gateway/api"
)

// waitStatus waits until the gateway's status satisfies ok; the bound
// only keeps a broken test from hanging.
func waitStatus(t *testing.T, g *Gateway, what string, ok func(api.Status) bool) api.Status {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := g.Status()
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: status %+v", what, st.Config)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sessionGateway starts a gateway whose configuration file says
// approval = "session", and waits until it is in force; cfg is the file.
func sessionGateway(t *testing.T) (g *Gateway, cfg string) {
	t.Helper()
	g, _ = startGatewayWith(t, func(dir string) {
		cfg = configFile(t, dir)
		os.WriteFile(cfg, []byte("approval = \"session\"\n"), 0o600)
	})
	waitStatus(t, g, "at start", approvalIs("session"))
	return g, cfg
}

func approvalIs(mode string) func(api.Status) bool {
	return func(st api.Status) bool { return st.Config.Approval == mode && st.Config.Error == "" }
}

// A configuration file that vanishes or is emptied leaves the policy in
// force, and status says why; a valid file is taken again.
func TestReloadKeepsThePolicyWhenTheFileGoes(t *testing.T) {
	const policy = "approval = \"deny\"\n[[rule]]\nhost = \"prod-*\"\napproval = \"deny\"\n"
	var cfg string
	write := func(s string) {
		if err := os.WriteFile(cfg, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	g, _ := startGatewayWith(t, func(dir string) {
		cfg = configFile(t, dir)
		write(policy)
	})
	waitStatus(t, g, "at start", approvalIs("deny"))

	for _, c := range []struct {
		what   string
		change func()
		says   string
	}{
		{"removed", func() { os.Remove(cfg) }, "was removed"},
		{"emptied", func() { write("") }, "holds no setting"},
		{"comments only", func() { write("# approval = \"none\"\n\n") }, "holds no setting"},
	} {
		c.change()
		st := waitStatus(t, g, c.what, func(st api.Status) bool { return strings.Contains(st.Config.Error, c.says) })
		if st.Config.Approval != "deny" || len(g.config.Rules) != 1 {
			t.Fatalf("%s: the policy changed to %q with %d rules", c.what, st.Config.Approval, len(g.config.Rules))
		}
		write(policy)
		waitStatus(t, g, c.what+", restored", approvalIs("deny"))
	}
	// A new file that loosens nothing is taken at once (per-call with
	// the deny rule gone would loosen, and wait for a card).
	write("approval = \"deny\"\n")
	waitStatus(t, g, "a new file", func(st api.Status) bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return approvalIs("deny")(st) && len(st.Config.Pending) == 0 && len(g.config.Rules) == 0
	})
}

// A configuration file that is a symbolic link is followed: edits to the
// file it leads to are noticed, and so is a link that now leads
// elsewhere, through a chain of links.
func TestReloadFollowsSymlinks(t *testing.T) {
	dotfiles, other := t.TempDir(), t.TempDir()
	real := filepath.Join(dotfiles, "postern.toml")
	g, _ := startGatewayWith(t, func(dir string) {
		os.WriteFile(real, []byte("approval = \"none\"\n"), 0o600)
		// config.toml -> other/link.toml -> dotfiles/postern.toml
		if err := os.Symlink(real, filepath.Join(other, "link.toml")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(other, "link.toml"), configFile(t, dir)); err != nil {
			t.Fatal(err)
		}
	})
	waitStatus(t, g, "at start", approvalIs("none"))

	// Each change tightens, and so is put in force at once. Edited in place, as an editor that writes through does.
	f, err := os.OpenFile(real, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("approval = \"session\"\n")
	f.Close()
	waitStatus(t, g, "the target edited", approvalIs("session"))

	// Replaced by rename, as most editors and dotfile managers do.
	tmp := filepath.Join(dotfiles, ".postern.toml.new")
	os.WriteFile(tmp, []byte("approval = \"per-call\"\n"), 0o600)
	os.Rename(tmp, real)
	waitStatus(t, g, "the target replaced", approvalIs("per-call"))

	// The middle link now leads to another file.
	second := filepath.Join(t.TempDir(), "second.toml")
	os.WriteFile(second, []byte("approval = \"deny\"\n"), 0o600)
	os.Remove(filepath.Join(other, "link.toml"))
	os.Symlink(second, filepath.Join(other, "link.toml"))
	waitStatus(t, g, "the link retargeted", approvalIs("deny"))
	os.WriteFile(second, []byte("approval = \"deny\"\n[[rule]]\nhost = \"prod-*\"\napproval = \"deny\"\n"), 0o600)
	waitStatus(t, g, "the new target edited", func(st api.Status) bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return approvalIs("deny")(st) && len(st.Config.Pending) == 0 && len(g.config.Rules) == 1
	})
}

// A configuration directory made after the gateway started is noticed,
// and so is the file in it; before, the gateway runs on the defaults and
// says nothing is amiss.
func TestReloadConfigDirMadeLater(t *testing.T) {
	g, _ := startGateway(t)
	if _, err := os.Stat(filepath.Dir(g.configPath)); err == nil {
		t.Fatal("the configuration directory exists already")
	}
	waitStatus(t, g, "at start", approvalIs("session"))
	os.MkdirAll(filepath.Dir(g.configPath), 0o700)
	os.WriteFile(g.configPath, []byte("approval = \"per-call\"\n"), 0o600)
	waitStatus(t, g, "a new file in a new directory", approvalIs("per-call"))
}

// configFile makes the configuration directory under dir (the test's
// XDG_CONFIG_HOME) and returns the file's path.
func configFile(t testing.TB, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "xdg_config_home", "postern", "config.toml")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}
