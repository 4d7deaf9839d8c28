package gateway

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/postern/postern/internal/askpass"
	"github.com/postern/postern/internal/config"
	"github.com/postern/postern/sshagent"
)

// A path shown to runs that holds the state directory (a known_hosts
// entry such as the home directory, which waits for no card) does not
// show the state directory, which is hidden on top of it: it must not
// spare the check that a process that says it is a confined run does not
// see the state. The card would otherwise say "confined" of a process
// that only gave up its privileges.
func TestVerifyConfinedNotSparedByAPathHoldingTheState(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test runs as root (as CI runs the tests), to start a process as another user")
	}
	home := t.TempDir()
	os.Chmod(home, 0o755)
	state := filepath.Join(home, "state")
	os.Mkdir(state, 0o755)
	os.WriteFile(filepath.Join(state, "vault"), nil, 0o644)
	cfg := config.Defaults()
	cfg.KnownHosts = []string{home}
	g := &Gateway{
		opts:       Options{Socket: filepath.Join(t.TempDir(), "agent.sock")},
		stateDir:   state,
		configPath: filepath.Join(t.TempDir(), "config.toml"),
		config:     cfg,
		askpass:    &askpass.Pinned{},
		agent:      &sshagent.Server{},
	}
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--no-new-privs", "sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := cmd.Process.Pid
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); string(comm) == "sleep\n" {
			break
		}
	}
	if err := g.verifyConfined(pid); err == nil || !strings.Contains(err.Error(), "it sees "+state) {
		t.Fatalf("verifyConfined = %v: a process that sees the state directory passes for a confined run", err)
	}
}
