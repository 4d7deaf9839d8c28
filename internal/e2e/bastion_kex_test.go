package e2e

import (
	"os"
	"strings"
	"testing"

	"github.com/postern/postern/bastion"
)

// Against OpenSSH 10's sshd, which offers mlkem768x25519-sha256 first,
// the bastion's upstream connection negotiates the same post-quantum
// exchange as OpenSSH 10's own client does directly, and the gateway's
// log says so.
func TestBastionKeyExchangeMatchesOpenSSH10(t *testing.T) {
	w := newBastionWorldOn(t, openSSH10(t), "", "")
	if r := w.ssh("true"); r.Code != 0 {
		t.Fatalf("through the bastion: %s", r)
	}
	bastionKex, directKex := w.kexes(t)
	if directKex != "mlkem768x25519-sha256" {
		t.Fatalf("OpenSSH 10 negotiated %s with its own sshd, not mlkem768x25519-sha256", directKex)
	}
	if bastionKex != directKex || !bastion.IsPQKex(bastionKex) {
		t.Fatalf("the bastion negotiated %s where OpenSSH 10 negotiates %s", bastionKex, directKex)
	}
	w.agent.WaitLog(t, "kex="+directKex+" kex_pq=true")
}

// kexes returns the key exchange of the bastion's last upstream
// connection (from the gateway's log) and the one the sshd's own OpenSSH
// client negotiates with it directly (from ssh -v).
func (w *bastionWorld) kexes(t testing.TB) (bastionKex, directKex string) {
	t.Helper()
	bastionKex = lastMatch(w.agent.Log(), `upstream key exchange.* kex=(\S+)`)
	probe, _ := w.e.Command(w.sshd.OpenSSH.SSH, w.sshd.SSHArgs("-v", w.sshd.Target(), "true")...).CombinedOutput()
	directKex = lastMatch(string(probe), `kex: algorithm: (\S+)`)
	if bastionKex == "" || directKex == "" {
		t.Fatalf("key exchanges not found: bastion %q, direct %q\n%s", bastionKex, directKex, probe)
	}
	return bastionKex, directKex
}

// Against a real sshd whose post-quantum exchange the bastion cannot speak
// (OpenSSH 9.2 offers sntrup761x25519-sha512, not mlkem768x25519-sha256),
// or that offers none: the command runs over a classical exchange and the
// gateway's log says so; with require_pq_kex the command is refused, the
// client is told why, and nothing runs on the host.
func TestBastionKeyExchangeWithoutPostQuantum(t *testing.T) {
	w := newBastionWorldSSHD(t, "KexAlgorithms curve25519-sha256,sntrup761x25519-sha512\n", "")
	marker := w.e.Path("ran")
	if r := w.ssh("touch", marker); r.Code != 0 {
		t.Fatalf("through the bastion: %s", r)
	}
	w.agent.WaitLog(t, "kex=curve25519-sha256 kex_pq=false")

	// The bastion's settings are read when the gateway starts.
	cfg := w.e.Path("config", "postern", "config.toml")
	w.e.Config(strings.Replace(string(mustRead(t, cfg)), "[bastion]\n", "[bastion]\nrequire_pq_kex = true\n", 1))
	w.agent.Stop()
	w.agent = w.e.StartAgent()
	w.e.MustRun("postern", "unlock", "--passphrase-file", w.pass)
	refused := w.e.Path("refused")
	r := w.ssh("touch", refused)
	if r.Code == 0 || !strings.Contains(r.Stderr, "require_pq_kex") {
		t.Fatalf("a host without a post-quantum exchange the bastion speaks was let through: %s", r)
	}
	if _, err := os.Stat(refused); err == nil {
		t.Fatal("the refused command ran on the host")
	}
}
