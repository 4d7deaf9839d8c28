package gateway

import (
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh/agent"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/xdg"
)

// A program outside every sandbox, with the user's uid, loosens the
// configuration while the gateway is stopped, and makes the state
// directory's approved copy agree (or deletes it). The copy sealed in
// the vault is approved all the same once the vault is unlocked (and no
// vault key signs before), so the looser file waits for a policy change
// card and status says what was put back.
func TestSealedPolicy(t *testing.T) {
	const strict = "approval = \"per-call\"\n[[rule]]\nhost = \"prod-*\"\napproval = \"deny\"\n"
	const loose = "approval = \"none\"\n"
	for _, c := range []struct {
		name   string
		attack func(cfg, approved string)
		want   string // a change the card lists
	}{
		{"rewritten", func(cfg, approved string) {
			os.WriteFile(cfg, []byte(loose), 0o600)
			os.WriteFile(approved, []byte(loose), 0o600)
		}, "approval: per-call → none"},
		{"deleted", func(cfg, approved string) {
			os.Remove(cfg)
			os.Remove(approved)
		}, `rule removed: host = "prod-*": deny`},
		// ssh-add's keys forwarded to an agent of the attacker's: the
		// gateway started with it, and holds the forwarding at the unlock.
		{"upstream", func(cfg, approved string) {
			forward := "upstream = \"/tmp/elsewhere.sock\"\nupstream_changes = \"forward\"\n" + strict
			os.WriteFile(cfg, []byte(forward), 0o600)
			os.WriteFile(approved, []byte(forward), 0o600)
		}, "upstream_changes: refuse → forward"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pass := []byte("seal pass")
			dir, cfg, vaultPath := sealedConfig(t, pass, strict)
			approvedPath := filepath.Join(filepath.Dir(vaultPath), xdg.ApprovedConfigFile)

			c.attack(cfg, approvedPath)
			g, sock, _ := runGateway(t, dir)
			if st, _ := g.vault.State(); st != api.VaultLocked {
				t.Fatalf("the vault is %s at start: a key could sign before the sealed copy is read", st)
			}
			unlockGateway(t, sock, pass)
			st := waitStatus(t, g, "after the unlock", func(st api.Status) bool { return st.Config.Restored != "" })
			if !slices.ContainsFunc(st.Config.Pending, func(s string) bool { return strings.Contains(s, c.want) }) {
				t.Fatalf("pending changes %q, want one with %q", st.Config.Pending, c.want)
			}
			// What status says is in force is what is: the file's
			// approval = "none" waits with the rest.
			if st.Config.Approval != "per-call" {
				t.Fatalf("status says approval %q is in force while the looser file waits, want the approved per-call", st.Config.Approval)
			}
			g.mu.Lock()
			approved := string(g.approvedRaw)
			g.mu.Unlock()
			if approved != strict {
				t.Fatalf("approved configuration %q, want the sealed one", approved)
			}
			if up := g.agent.Upstream; up != nil && up.Forwards() {
				t.Fatal("adds and removes still go to the upstream agent the sealed copy never approved")
			}
			if b, _ := os.ReadFile(approvedPath); string(b) != strict {
				t.Fatalf("state directory's copy %q, want the sealed one put back", b)
			}
		})
	}
}

// waitSealed waits until the vault at path holds want as the approved
// configuration.
// sealedConfig sets up a gateway's home with configuration approved and a
// vault with passphrase pass, has a gateway seal approved into the vault
// and stop, and returns the home, the configuration file and the vault.
func sealedConfig(t *testing.T, pass []byte, approved string) (dir, cfg, vaultPath string) {
	t.Helper()
	dir = gatewayHome(t)
	cfg = configFile(t, dir)
	if err := os.WriteFile(cfg, []byte(approved), 0o600); err != nil {
		t.Fatal(err)
	}
	vaultPath = initTestVault(t, pass)
	_, sock, stop := runGateway(t, dir)
	unlockGateway(t, sock, pass)
	waitSealed(t, vaultPath, pass, approved)
	stop()
	return dir, cfg, vaultPath
}

func waitSealed(t *testing.T, path string, pass []byte, want string) {
	t.Helper()
	newSealedReader(t, path, pass).waitSecret(api.SecretApprovedConfig, "the approved configuration", func(got []byte) bool {
		return string(got) == sealedConfigPrefix+want
	})
}

// An upstream agent the sealed copy never approved, which the gateway
// started with from a rewritten configuration, is used no more once the
// vault is unlocked: its keys are not listed, and none signs, so that
// the agent of whoever rewrote the configuration sees no request the
// person approves.
func TestSealedPolicyUnapprovedUpstream(t *testing.T) {
	const strict = "approval = \"per-call\"\n"
	pass := []byte("seal pass")
	dir, cfg, vaultPath := sealedConfig(t, pass, strict)

	// The attacker's agent, and the configuration rewritten to use it.
	theirs := filepath.Join(dir, "theirs.sock")
	l, err := net.Listen("unix", theirs)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	kr := agent.NewKeyring()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	if err := kr.Add(agent.AddedKey{PrivateKey: priv, Comment: "theirs"}); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { agent.ServeAgent(kr, c); c.Close() }()
		}
	}()
	rewritten := "upstream = \"" + theirs + "\"\n" + strict
	os.WriteFile(cfg, []byte(rewritten), 0o600)
	os.WriteFile(filepath.Join(filepath.Dir(vaultPath), xdg.ApprovedConfigFile), []byte(rewritten), 0o600)

	g, sock, _ := runGateway(t, dir)
	unlockGateway(t, sock, pass)
	waitStatus(t, g, "after the unlock", func(st api.Status) bool { return st.Config.Restored != "" })
	nc, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	keys, err := agent.NewClient(nc).List()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if k.Comment == "theirs" {
			t.Fatal("the agent lists the keys of an upstream agent the sealed copy never approved")
		}
	}
}
