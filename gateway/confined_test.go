package gateway

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A process is taken for a confined run only where the kernel shows it
// confined: not one that made namespaces of its own and kept its
// privileges, nor one without privileges that still sees the gateway's
// state. The card would otherwise say "confined" of either.
func TestVerifyConfinedRefusesWhatIsNotConfined(t *testing.T) {
	for _, p := range []string{"unshare", "setpriv"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("%s (util-linux) is needed", p)
		}
	}
	if os.Geteuid() != 0 {
		t.Fatal("this test runs as root (as CI runs the tests), to start a process as another user")
	}
	state := t.TempDir()
	os.Chmod(state, 0o755)
	secret := filepath.Join(state, "vault")
	os.WriteFile(secret, nil, 0o644)
	for _, c := range []struct {
		name string
		argv []string
		want string
	}{
		{"bare namespaces", []string{"unshare", "-Urpm", "--fork", "sleep", "30"}, "NoNewPrivs"},
		{"no privileges, the state in view", []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--no-new-privs", "sleep", "30"}, "it sees " + secret},
	} {
		cmd := exec.Command(c.argv[0], c.argv[1:]...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The sleep: unshare's child, or setpriv itself once it has
		// executed it.
		pid := cmd.Process.Pid
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if c.argv[0] == "unshare" {
				b, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/task/" + strconv.Itoa(cmd.Process.Pid) + "/children")
				if f := strings.Fields(string(b)); len(f) > 0 {
					pid, _ = strconv.Atoi(f[0])
				}
			}
			if comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); string(comm) == "sleep\n" {
				break
			}
		}
		// The state directory's content, and the file itself.
		errs := []error{verifyHidden(pid, []string{state}), verifyHidden(pid, nil, secret)}
		cmd.Process.Kill()
		cmd.Wait()
		for _, err := range errs {
			if err == nil || !strings.Contains(err.Error(), "is not confined") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %v", c.name, err)
			}
		}
	}
}

func TestOverlaps(t *testing.T) {
	// The home directory is shown read-only (as a known_hosts entry
	// naming it would); the configuration's directory is shown inside a
	// hidden ~/.config.
	shown := []string{"/home/u/.config/postern", "/run/user/1000/postern/agent.sock.ctl", "/home/u"}
	hidden := []string{"/home/u/.local/state/postern", "/run/user/1000/postern", "/home/u/.config"}
	for p, want := range map[string]bool{
		"/home/u/.config/postern":               true,
		"/home/u/.config/postern/config.toml":   true,
		"/home/u/.config":                       true,
		"/home/u/.config/postern2":              false,
		"/run/user/1000/postern/agent.sock":     false,
		"/run/user/1000/postern/agent.sock.ctl": true,
		"/home/u/.local/state/postern":          false,
	} {
		if got := overlaps(p, shown, hidden); got != want {
			t.Errorf("overlaps(%q) = %v", p, got)
		}
	}
}
