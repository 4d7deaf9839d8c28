package e2e

// OpenSSH certificates end to end: a user certificate whose private key
// only postern holds, accepted by a real sshd through TrustedUserCAKeys
// alone (authorized_keys is empty), through the agent and through the
// bastion.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/user"
	"strings"
	"testing"
)

func currentUser(t testing.TB) string {
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return u.Username
}

// userCA makes a CA and a user certificate for key (KEY-cert.pub) with
// the principal, and returns the CA's public key file.
func userCA(t testing.TB, e *Env, key, principal string, extra ...string) string {
	t.Helper()
	ca := e.Keygen("user-ca", "ed25519", 0, "")
	e.MustRun("ssh-keygen", append([]string{"-q", "-s", ca, "-I", "cert-of-" + principal, "-n", principal}, append(extra, key+".pub")...)...)
	return ca + ".pub"
}

func TestCertificateFileLoginThroughAgent(t *testing.T) {
	need(t, "ssh", "sshd", "ssh-keygen", "ssh-add")
	e := newEnv(t)
	e.Config(`approval = "none"`)
	e.StartAgent()
	key := e.Keygen("user", "ed25519", 0, "")
	ca := userCA(t, e, key, currentUser(t))
	cert := key + "-cert.pub"
	sshd := startSSHDConfig(t, "", "TrustedUserCAKeys "+ca)
	// Only the plain key is in the agent; ssh takes the certificate from
	// CertificateFile and asks the agent to sign with the plain key.
	e.MustRun("ssh-add", "-k", key)
	os.Remove(key)
	r := e.Run("ssh", sshd.SSHArgs("-o", "IdentitiesOnly=yes", "-o", "IdentityFile="+key+".pub", "-o", "CertificateFile="+cert, sshd.Target(), "echo", "cert-login")...)
	if r.Code != 0 || strings.TrimSpace(r.Stdout) != "cert-login" {
		t.Fatalf("CertificateFile login through the agent: %s\nsshd:\n%s", r, sshd.Log())
	}
	if !strings.Contains(sshd.Log(), "Accepted publickey") || !strings.Contains(sshd.Log(), "ED25519-CERT") {
		t.Fatalf("sshd did not accept a certificate:\n%s", sshd.Log())
	}
	// Without the certificate the same key is refused: the login above
	// was the certificate's.
	if r := e.Run("ssh", sshd.SSHArgs("-o", "IdentitiesOnly=yes", "-o", "IdentityFile="+key+".pub", sshd.Target(), "true")...); r.Code == 0 {
		t.Fatal("the plain key logged in although authorized_keys is empty")
	}
}

func TestVaultCertificates(t *testing.T) {
	need(t, "ssh", "sshd", "ssh-keygen", "ssh-add")
	e := newEnv(t)
	pass := e.WriteFile("pass", "vault pass\n", 0o600)
	key := e.Keygen("vault-user", "ed25519", 0, "")
	ca := userCA(t, e, key, currentUser(t))
	e.MustRun("postern", "vault", "init", "--passphrase-file", pass)
	// A certificate of a key the vault does not hold is refused.
	if r := e.Run("postern", "vault", "add", "--passphrase-file", pass, key+"-cert.pub"); r.Code != 1 || !strings.Contains(r.Stderr, "add its private key first") {
		t.Fatalf("certificate before its key: %s", r)
	}
	e.MustRun("postern", "vault", "add", "--passphrase-file", pass, key)
	e.MustRun("postern", "vault", "add", "--passphrase-file", pass, key+"-cert.pub")
	// An expired certificate is refused.
	e.MustRun("ssh-keygen", "-q", "-s", ca[:len(ca)-4], "-I", "old", "-n", "x", "-V", "20200101:20200102", key+".pub")
	if r := e.Run("postern", "vault", "add", "--passphrase-file", pass, key+"-cert.pub"); r.Code != 1 || !strings.Contains(r.Stderr, "expired") {
		t.Fatalf("expired certificate: %s", r)
	}
	list := e.MustRun("postern", "vault", "list", "--passphrase-file", pass).Stdout
	if !strings.Contains(list, `certificate ssh-ed25519-cert-v01@openssh.com "cert-of-`+currentUser(t)+`"`) {
		t.Fatalf("vault list does not show the certificate:\n%s", list)
	}
	js := e.MustRun("postern", "vault", "list", "--json", "--passphrase-file", pass).Stdout
	var keys []struct {
		Certificates []struct {
			Type       string   `json:"type"`
			KeyID      string   `json:"key_id"`
			Principals []string `json:"principals"`
			Expired    bool     `json:"expired"`
		} `json:"certificates"`
	}
	if err := json.Unmarshal([]byte(js), &keys); err != nil || len(keys) != 1 || len(keys[0].Certificates) != 1 {
		t.Fatalf("vault list --json: %v\n%s", err, js)
	}
	if c := keys[0].Certificates[0]; c.Type != "ssh-ed25519-cert-v01@openssh.com" || c.KeyID != "cert-of-"+currentUser(t) || c.Expired {
		t.Fatalf("vault list --json: %+v", c)
	}
	os.Remove(key)
	os.Remove(key + "-cert.pub")

	// Unlocked, the agent lists the key and its certificate, and a login
	// with only TrustedUserCAKeys works with the vault's certificate.
	sshd := startSSHDConfig(t, "", "TrustedUserCAKeys "+ca)
	e.Config(fmt.Sprintf("approval = \"none\"\nknown_hosts = [%q]\n", sshd.KnownHosts))
	e.StartAgent()
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
	L := e.MustRun("ssh-add", "-L").Stdout
	if !strings.Contains(L, "ssh-ed25519 ") || !strings.Contains(L, "ssh-ed25519-cert-v01@openssh.com ") {
		t.Fatalf("ssh-add -L:\n%s", L)
	}
	r := e.Run("ssh", sshd.SSHArgs(sshd.Target(), "echo", "vault-cert")...)
	if r.Code != 0 || strings.TrimSpace(r.Stdout) != "vault-cert" {
		t.Fatalf("login with the vault's certificate: %s\nsshd:\n%s", r, sshd.Log())
	}
}

func TestCertificateLoginThroughBastion(t *testing.T) {
	need(t, "ssh", "sshd", "ssh-keygen")
	b := newBastionWorld(t, "")
	// The vault key gets a certificate; a second sshd trusts only its CA.
	ca := userCA(t, b.e, b.key, b.sshd.User)
	b.e.MustRun("postern", "vault", "add", "--passphrase-file", b.pass, b.key+"-cert.pub")
	sshd := startSSHDConfig(t, "", "TrustedUserCAKeys "+ca)
	b.agent.Stop()
	b.e.Config(fmt.Sprintf("approval = \"none\"\nknown_hosts = [%q]\n[bastion]\nenabled = true\nhosts = [\"127.0.0.1\"]\n", sshd.KnownHosts))
	b.e.ForgetApproved(b.pass) // the bastion's settings are read at start
	b.agent = b.e.StartAgent()
	b.e.MustRun("postern", "unlock", "--passphrase-file", b.pass)
	r := b.e.Run("ssh", "-F", b.sshConfig, "-p", fmt.Sprint(sshd.Port), sshd.User+"@127.0.0.1", "echo", "through-bastion")
	if r.Code != 0 || strings.TrimSpace(r.Stdout) != "through-bastion" {
		t.Fatalf("certificate login through the bastion: %s\nagent:\n%s\nsshd:\n%s", r, b.agent.Log(), sshd.Log())
	}
	if !strings.Contains(sshd.Log(), "ED25519-CERT") {
		t.Fatalf("the bastion did not log in with the certificate:\n%s", sshd.Log())
	}
}
