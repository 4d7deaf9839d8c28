package sshagent

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/ssh"
)

// hostCert has ssh-keygen make a CA of caType and a host certificate it
// signs with algorithm alg for the principals, and returns the CA's key
// and the certificate.
func hostCert(t *testing.T, caType, alg, principals string) (ca ssh.PublicKey, cert *ssh.Certificate) {
	t.Helper()
	dir := t.TempDir()
	keygen := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ssh-keygen", append([]string{"-q"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen %q: %v\n%s", args, err, out)
		}
	}
	keygen("-t", caType, "-N", "", "-f", filepath.Join(dir, "ca"))
	keygen("-t", "ed25519", "-N", "", "-f", filepath.Join(dir, "host"))
	keygen("-s", filepath.Join(dir, "ca"), "-t", alg, "-h", "-I", "host", "-n", principals, filepath.Join(dir, "host.pub"))
	read := func(name string) ssh.PublicKey {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		k, _, _, _, err := ssh.ParseAuthorizedKey(b)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	return read("ca.pub"), read("host-cert.pub").(*ssh.Certificate)
}

// A hop named by its certificate authority (ssh-add -h with an
// @cert-authority line) is the host a certificate of that CA names, as
// OpenSSH's agent matches it: a principal is a pattern the hop's name
// matches (ssh-keygen -h -n '*.example.test'), and a CA signature made
// with SHA-1 (ssh-rsa) names no host.
func TestCertificateAuthorityHop(t *testing.T) {
	for _, tc := range []struct {
		name, caType, alg, principals, host string
		want                                bool
	}{
		{"exact principal", "ed25519", "ssh-ed25519", "db.example.test", "db.example.test", true},
		{"wildcard principal", "ed25519", "ssh-ed25519", "*.example.test", "db.example.test", true},
		{"wildcard for another domain", "ed25519", "ssh-ed25519", "*.example.org", "db.example.test", false},
		{"another principal", "ed25519", "ssh-ed25519", "web.example.test", "db.example.test", false},
		{"rsa-sha2-512 CA signature", "rsa", "rsa-sha2-512", "db.example.test", "db.example.test", true},
		{"SHA-1 CA signature", "rsa", "ssh-rsa", "db.example.test", "db.example.test", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ca, cert := hostCert(t, tc.caType, tc.alg, tc.principals)
			hop := Hop{Hostname: tc.host, Keys: []HopKey{{Key: ca, IsCA: true}}}
			if got := hop.matches(cert); got != tc.want {
				t.Fatalf("a host certificate for %q (CA signature %s) matches the hop %q: %v, want %v", tc.principals, cert.Signature.Format, tc.host, got, tc.want)
			}
		})
	}
}
