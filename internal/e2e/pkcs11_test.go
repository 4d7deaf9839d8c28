package e2e

// PKCS#11 keys in a softhsm2 token, loaded with the real ssh-add -s into
// postern's ssh-pkcs11-helper and used by the real ssh and ssh-keygen
// -Y sign, with a card on every use.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const softhsm = "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so"

// softToken makes a softhsm2 token holding an RSA and an ECDSA key, and
// returns the paths of the keys' public halves (the private halves are
// deleted: only the token holds them).
func softToken(t *testing.T, e *Env, pin string) []string {
	t.Helper()
	need(t, "softhsm2-util", "openssl")
	if _, err := os.Stat(softhsm); err != nil {
		t.Fatalf("%s is missing (apt-get install softhsm2): %v", softhsm, err)
	}
	conf := e.WriteFile("softhsm2.conf", fmt.Sprintf("directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\nslots.removable = false\n", e.Path("tokens")), 0o600)
	os.MkdirAll(e.Path("tokens"), 0o700)
	e.Setenv("SOFTHSM2_CONF", conf)
	e.MustRun("softhsm2-util", "--init-token", "--free", "--label", "postern", "--pin", pin, "--so-pin", "12345678")
	var pubs []string
	for i, alg := range [][]string{
		{"-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"},
		{"-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"},
	} {
		key := e.Path(fmt.Sprintf("token-key-%d", i))
		e.MustRun("openssl", append([]string{"genpkey", "-out", key}, alg...)...)
		os.Chmod(key, 0o600)
		id := fmt.Sprintf("0%d", i+1)
		e.MustRun("softhsm2-util", "--import", key, "--token", "postern", "--label", id, "--id", id, "--pin", pin)
		pub := e.MustRun("ssh-keygen", "-y", "-f", key).Stdout
		e.WriteFile(fmt.Sprintf("token-key-%d.pub", i), pub, 0o600)
		os.Remove(key)
		pubs = append(pubs, key)
	}
	return pubs
}

// tokenNoCards makes the token of softToken, an askpass that answers
// ssh-add's question for its PIN, and a configuration that asks no card:
// for tests of the token's keys and helper, not of approvals.
func tokenNoCards(t *testing.T, e *Env) []string {
	t.Helper()
	const pin = "1234"
	keys := softToken(t, e, pin)
	e.Setenv("SSH_ASKPASS", e.WriteFile("askpass", "#!/bin/sh\necho "+pin+"\n", 0o755))
	e.Setenv("SSH_ASKPASS_REQUIRE", "force")
	e.Config(`approval = "none"`)
	return keys
}

func TestPKCS11ThroughACard(t *testing.T) {
	mostlyWaits(t)
	need(t, "ssh-add", "ssh-keygen", "ssh", "sshd")
	e := newEnv(t)
	const pin = "1234"
	keys := softToken(t, e, pin)
	// One askpass for both: ssh-add asks it for the PIN; the gateway
	// shows it its cards, which it records and approves while the file
	// allow exists (a per-call login to a host the inventory does not
	// name by typing "unknown").
	cards, allow := e.Path("cards.log"), e.Path("allow")
	e.Setenv("SSH_ASKPASS", e.WriteFile("askpass", fmt.Sprintf(`#!/bin/sh
case "$SSH_ASKPASS_PROMPT:$1" in
confirm:*|*"to approve this one use"*)
	printf '%%s\n--\n' "$1" >> %s
	test -e %s || exit 1
	sleep %s
	[ "$SSH_ASKPASS_PROMPT" = confirm ] || echo unknown
	exit
esac
echo %s
`, cards, allow, askpassRead, pin), 0o755))
	e.Setenv("SSH_ASKPASS_REQUIRE", "force")
	e.Config(`approval = "per-call"`)
	a := e.StartAgent()
	e.MustRun("ssh-add", "-s", softhsm)
	l := e.MustRun("ssh-add", "-l").Stdout
	var authorized strings.Builder
	for _, k := range keys {
		if !strings.Contains(l, fingerprint(t, e, k)) {
			t.Fatalf("ssh-add -l lacks the token's key %s:\n%s", k, l)
		}
		authorized.WriteString(pubKey(t, k) + "\n")
	}
	sshd := startSSHD(t, authorized.String())
	a.Reconfigure(t, fmt.Sprintf("approval = \"per-call\"\nknown_hosts = [%q]\n", sshd.KnownHosts))
	msg := e.WriteFile("m", "x", 0o600)
	for _, k := range keys {
		login := func() Result {
			return e.Run("ssh", sshd.SSHArgs("-o", "IdentitiesOnly=yes", "-o", "IdentityFile="+k+".pub", sshd.Target(), "echo", "token-login")...)
		}
		// Denied on the card: no login, nothing signed.
		os.Remove(cards)
		os.Remove(allow)
		before := strings.Count(sshd.Log(), "Accepted publickey")
		if r := login(); r.Code == 0 {
			t.Fatalf("logged in with a token key although the card was denied: %s", r)
		}
		card := string(mustRead(t, cards))
		for _, want := range []string{"Allow, this one time,", fingerprint(t, e, k), "Destination: host key " + hostFingerprint(t, e, sshd)} {
			if !strings.Contains(card, want) {
				t.Errorf("the card lacks %q:\n%s", want, card)
			}
		}
		// Approved: the token signs.
		os.WriteFile(allow, nil, 0o600)
		if r := login(); r.Code != 0 || strings.TrimSpace(r.Stdout) != "token-login" {
			t.Fatalf("login with an approved token key %s: %s\nagent log:\n%s", k, r, a.Log())
		}
		if n := strings.Count(sshd.Log(), "Accepted publickey"); n != before+1 {
			t.Fatalf("sshd accepted %d logins, want %d", n, before+1)
		}
		os.Remove(msg + ".sig")
		e.MustRun("ssh-keygen", "-Y", "sign", "-n", "file", "-f", k+".pub", msg)
		signers := e.WriteFile("allowed_signers", "me "+pubKey(t, k)+"\n", 0o600)
		if r := e.RunInput("x", "ssh-keygen", "-Y", "verify", "-f", signers, "-I", "me", "-n", "file", "-s", msg+".sig"); r.Code != 0 {
			t.Fatalf("verify a token signature: %s", r)
		}
	}
	e.MustRun("ssh-add", "-e", softhsm)
	if r := e.Run("ssh-add", "-l"); strings.Contains(r.Stdout, fingerprint(t, e, keys[0])) {
		t.Fatalf("the token's keys are still listed after ssh-add -e:\n%s", r.Stdout)
	}
	// The helper is gone with the provider.
	if out, _ := exec.Command("pgrep", "-f", "ssh-pkcs11-helper", "-P", fmt.Sprint(a.PID())).Output(); len(out) != 0 {
		t.Fatalf("ssh-pkcs11-helper still runs after ssh-add -e: %s", out)
	}
}

// OpenSSH 10's ssh-add against a token, as OpenSSH 10's ssh-agent
// answers it: loading the provider again while its keys are held adds
// nothing and fails; after ssh-add -D it adds them again; ssh-add -e of a
// provider not loaded succeeds; ssh-add -s with files passes over the
// plain keys and the certificates of other keys among them, and adds
// the certificate of a token key beside the key.
func TestPKCS11AsOpenSSH10(t *testing.T) {
	addTool := filepath.Join(filepath.Dir(openSSH10(t).SSH), "ssh-add")
	e := newEnv(t)
	keys := tokenNoCards(t, e)
	a := e.StartAgent()
	add := func(args ...string) Result { return e.Run(addTool, args...) }
	listed := func() string { return add("-L").Stdout }
	held := func(want int) {
		t.Helper()
		if n := strings.Count(listed(), "\n"); n != want {
			t.Fatalf("%d keys listed, want %d:\n%s\nagent log:\n%s", n, want, listed(), a.Log())
		}
	}

	if r := add("-s", softhsm); r.Code != 0 {
		t.Fatalf("ssh-add -s: %s", r)
	}
	held(2)
	if r := add("-s", softhsm); r.Code == 0 {
		t.Fatalf("the provider was loaded again while its keys were held: %s", r)
	}
	held(2)
	if r := add("-D"); r.Code != 0 {
		t.Fatalf("ssh-add -D: %s", r)
	}
	if r := add("-s", softhsm); r.Code != 0 {
		t.Fatalf("ssh-add -s after ssh-add -D: %s\nagent log:\n%s", r, a.Log())
	}
	held(2)
	for range 2 {
		if r := add("-e", softhsm); r.Code != 0 {
			t.Fatalf("ssh-add -e: %s", r)
		}
	}
	if r := e.Run(addTool, "-l"); r.Code == 0 {
		t.Fatalf("keys listed after ssh-add -e:\n%s", r.Stdout)
	}

	// A certificate of the first token key, another of a key the token
	// does not hold, and plain keys, all given to ssh-add -s.
	ca := e.Keygen("ca", "ed25519", 0, "")
	other := e.Keygen("other", "ed25519", 0, "")
	for _, k := range []string{keys[0], other} {
		e.MustRun("ssh-keygen", "-q", "-s", ca, "-I", "test", "-n", "me", k+".pub")
	}
	if r := add("-s", softhsm, ca+".pub", keys[1]+".pub", other+"-cert.pub", keys[0]+"-cert.pub"); r.Code != 0 {
		t.Fatalf("ssh-add -s with certificates and plain keys: %s\nagent log:\n%s", r, a.Log())
	}
	held(3)
	cert := strings.Fields(string(mustRead(t, keys[0]+"-cert.pub")))[1]
	if l := listed(); !strings.Contains(l, cert) || strings.Contains(l, strings.Fields(string(mustRead(t, other+"-cert.pub")))[1]) {
		t.Fatalf("the token key's certificate is not listed, or the other key's is:\n%s", l)
	}
	if r := add("-T", keys[0]+"-cert.pub"); r.Code != 0 {
		t.Fatalf("ssh-add -T with the token key's certificate: %s", r)
	}
}
