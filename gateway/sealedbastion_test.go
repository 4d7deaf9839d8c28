package gateway

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

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
			// And postern status, and doctor, say that it refuses.
			st, err := api.NewClient(sock).Status(context.Background())
			if err != nil || st.Bastion == nil || !strings.Contains(st.Bastion.Refusing, "restart the gateway") || st.Bastion.Since == "" {
				t.Fatalf("status of the bastion the sealed copy does not approve: %+v %v", st.Bastion, err)
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
	if g.bastionHeld.Load() != nil {
		t.Fatal("the bastion started from a configuration that only tightens the sealed one serves no more")
	}
}

// A bastion the unlock holds serves no command from then on, on a client
// connection made before the unlock too (ssh's ControlMaster keeps one
// for hours): it does not reach a host with the known_hosts files the
// sealed configuration does not approve.
func TestHeldBastionServesNoCommandOnAnEarlierConnection(t *testing.T) {
	const strict = "approval = \"none\"\n"
	pass := []byte("seal pass")
	files := t.TempDir()
	mine := filepath.Join(files, "mine_known_hosts")
	theirs := filepath.Join(files, "their_known_hosts")
	host, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	dialled := make(chan struct{}, 16)
	go func() {
		for {
			c, err := host.Accept()
			if err != nil {
				return
			}
			dialled <- struct{}{}
			c.Close()
		}
	}()
	_, hostKey, _ := ed25519.GenerateKey(rand.Reader)
	hostPub, _ := ssh.NewSignerFromKey(hostKey)
	port := host.Addr().(*net.TCPAddr).Port
	os.WriteFile(mine, nil, 0o600)
	os.WriteFile(theirs, []byte(fmt.Sprintf("[127.0.0.1]:%d %s", port, ssh.MarshalAuthorizedKey(hostPub.PublicKey()))), 0o600)
	dir, cfg, vaultPath := sealedConfig(t, pass, fmt.Sprintf("%s[bastion]\nenabled = true\nknown_hosts = [%q]\n", strict, mine))
	rewritten := fmt.Sprintf("%s[bastion]\nenabled = true\nknown_hosts = [%q]\n", strict, theirs)
	os.WriteFile(cfg, []byte(rewritten), 0o600)
	os.WriteFile(filepath.Join(filepath.Dir(vaultPath), xdg.ApprovedConfigFile), []byte(rewritten), 0o600)

	g, sock, _ := runGateway(t, dir)
	// Connected while the vault is locked, before the unlock holds the
	// bastion.
	target, _ := bastion.ParseTarget("u", "127.0.0.1", strconv.Itoa(port))
	conn, err := bastion.Connect(g.bastionL.Addr().String(), target)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Minute))
	cc, chans, reqs, err := ssh.NewClientConn(conn, target.Addr(), &ssh.ClientConfig{User: "u", HostKeyCallback: ssh.InsecureIgnoreHostKey()})
	if err != nil {
		t.Fatal(err)
	}
	client := ssh.NewClient(cc, chans, reqs)
	defer client.Close()

	unlockGateway(t, sock, pass)
	waitStatus(t, g, "after the unlock", func(st api.Status) bool { return st.Config.Restored != "" })
	if g.bastionHeld.Load() == nil {
		t.Fatal("the bastion the sealed copy does not approve is not held")
	}
	key := filepath.Join(t.TempDir(), "id")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}
	add := exec.Command("ssh-add", key)
	add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("ssh-add: %v %s", err, out)
	}

	sess, err := client.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var stderr strings.Builder
	sess.Stderr = &stderr
	err = sess.Run("make deploy")
	select {
	case <-dialled:
		t.Fatalf("the held bastion reached the host its unapproved known_hosts names: %v, %q", err, stderr.String())
	default:
	}
	if !strings.Contains(stderr.String(), "restart the gateway") {
		t.Fatalf("a command on a connection made before the hold: %v, %q", err, stderr.String())
	}
}
