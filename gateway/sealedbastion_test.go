package gateway

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/postern/postern/bastion"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/xdg"
)

// A bastion the sealed copy never enabled, or one that verifies real
// hosts with known_hosts files it never approved, which the gateway
// started from a rewritten configuration, serves no command once the
// vault is unlocked.
func TestSealedPolicyUnapprovedBastion(t *testing.T) {
	const strict = "approval = \"per-call\"\n"
	for _, c := range []struct{ name, approved, rewritten string }{
		{"enabled", strict, "[bastion]\nenabled = true\n"},
		{"known_hosts", strict + "[bastion]\nenabled = true\nknown_hosts = [\"/etc/ssh/ssh_known_hosts\"]\n", "[bastion]\nenabled = true\nknown_hosts = [\"/tmp/theirs\"]\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pass := []byte("seal pass")
			dir, cfg, vaultPath := sealedConfig(t, pass, c.approved)
			rewritten := strict + c.rewritten
			os.WriteFile(cfg, []byte(rewritten), 0o600)
			os.WriteFile(filepath.Join(filepath.Dir(vaultPath), xdg.ApprovedConfigFile), []byte(rewritten), 0o600)

			g, sock, _ := runGateway(t, dir)
			if g.bastionL == nil {
				t.Fatal("no bastion started from the rewritten configuration")
			}
			unlockGateway(t, sock, pass)
			waitStatus(t, g, "after the unlock", func(st api.Status) bool { return st.Config.Restored != "" })
			target, _ := bastion.ParseTarget("u", "127.0.0.1", "1")
			conn, err := bastion.Connect(g.bastionL.Addr().String(), target)
			if err == nil {
				conn.Close()
			}
			if err == nil || !strings.Contains(err.Error(), "restart the gateway") {
				t.Fatalf("the bastion the sealed copy does not approve answered: %v", err)
			}
		})
	}
}

// A bastion started from a configuration that only tightens the sealed
// one (a known_hosts file fewer, with no @revoked lines, as a gateway
// restarted on a stricter file while the vault was locked) is approved by
// it, and goes on serving once the unlock has put the sealed copy back.
func TestSealedPolicyTighterBastionServes(t *testing.T) {
	pass := []byte("seal pass")
	files := t.TempDir()
	mine := filepath.Join(files, "mine_known_hosts")
	other := filepath.Join(files, "other_known_hosts")
	for _, f := range []string{mine, other} {
		os.WriteFile(f, nil, 0o600)
	}
	approved := fmt.Sprintf("approval = \"per-call\"\nknown_hosts = [%q, %q]\n[bastion]\nenabled = true\n", mine, other)
	dir, cfg, vaultPath := sealedConfig(t, pass, approved)
	tighter := fmt.Sprintf("approval = \"per-call\"\nknown_hosts = [%q]\n[bastion]\nenabled = true\n", mine)
	os.WriteFile(cfg, []byte(tighter), 0o600)
	os.WriteFile(filepath.Join(filepath.Dir(vaultPath), xdg.ApprovedConfigFile), []byte(tighter), 0o600)

	g, sock, _ := runGateway(t, dir)
	unlockGateway(t, sock, pass)
	waitStatus(t, g, "after the unlock", func(st api.Status) bool { return st.Config.Restored != "" })
	if g.bastionHeld.Load() {
		t.Fatal("the bastion started from a configuration that only tightens the sealed one serves no more")
	}
}
