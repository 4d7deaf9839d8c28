package vault

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

func needSSHKeygen(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Fatal("ssh-keygen is not installed (Debian package openssh-client; .ci/run installs it)")
	}
}

func sshKeygen(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("ssh-keygen", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("ssh-keygen %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// keygenFingerprint returns the fingerprint and comment ssh-keygen -l
// prints for file: "256 SHA256:… some comment (ED25519)".
func keygenFingerprint(t *testing.T, file string) (fp, comment string) {
	t.Helper()
	f := strings.Fields(sshKeygen(t, "-l", "-E", "sha256", "-f", file))
	if len(f) < 3 {
		t.Fatalf("ssh-keygen -l: %q", f)
	}
	return f[1], strings.Join(f[2:len(f)-1], " ")
}

func passFunc(pass string, called *bool) func() ([]byte, error) {
	return func() ([]byte, error) {
		*called = true
		return []byte(pass), nil
	}
}

// checkStoredKey writes the key NewKey produced to a file and has
// ssh-keygen read it back.
func checkStoredKey(t *testing.T, dir string, k Key, wantFP, wantComment string) {
	t.Helper()
	fp, err := k.Fingerprint()
	if err != nil {
		t.Fatal(err)
	}
	if fp != wantFP {
		t.Fatalf("fingerprint %s, ssh-keygen says %s", fp, wantFP)
	}
	file := filepath.Join(dir, "stored")
	os.Remove(file)
	mustWrite(t, file, k.Private)
	gotFP, gotComment := keygenFingerprint(t, file)
	if gotFP != wantFP || gotComment != wantComment {
		t.Fatalf("ssh-keygen -l on the stored key: %s %q, want %s %q", gotFP, gotComment, wantFP, wantComment)
	}
	pub := strings.Fields(sshKeygen(t, "-y", "-P", "", "-f", file))
	info, err := k.Info()
	if err != nil {
		t.Fatal(err)
	}
	if pub[0] != info.PublicKey.Type() || len(pub) < 2 {
		t.Fatalf("ssh-keygen -y: %v", pub)
	}
}

func TestImportSSHKeygenKeys(t *testing.T) {
	needSSHKeygen(t)
	dir := t.TempDir()
	cases := []struct {
		name string
		args []string
		pass string
	}{
		{"ed25519", []string{"-t", "ed25519"}, ""},
		{"ecdsa-256", []string{"-t", "ecdsa", "-b", "256"}, ""},
		{"ecdsa-384", []string{"-t", "ecdsa", "-b", "384"}, ""},
		{"ecdsa-521", []string{"-t", "ecdsa", "-b", "521"}, ""},
		{"rsa-3072", []string{"-t", "rsa", "-b", "3072"}, ""},
		{"ed25519-passphrase", []string{"-t", "ed25519"}, "pass phrase with spaces"},
		{"ecdsa-aes256-gcm", []string{"-t", "ecdsa", "-Z", "aes256-gcm@openssh.com"}, "pw-gcm"},
		{"ed25519-aes128-ctr", []string{"-t", "ed25519", "-Z", "aes128-ctr"}, "pw-ctr"},
		{"ed25519-aes192-cbc", []string{"-t", "ed25519", "-Z", "aes192-cbc"}, "pw-cbc"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(dir, c.name)
			comment := "user@host " + c.name
			sshKeygen(t, append(c.args, "-q", "-N", c.pass, "-C", comment, "-f", file)...)
			wantFP, wantComment := keygenFingerprint(t, file+".pub")
			if wantComment != comment {
				t.Fatalf("ssh-keygen comment %q", wantComment)
			}
			data := mustRead(t, file)
			var called bool
			priv, gotComment, err := ParsePrivateKeyFile(data, passFunc(c.pass, &called))
			if err != nil {
				t.Fatal(err)
			}
			if called != (c.pass != "") {
				t.Errorf("passphrase asked: %v", called)
			}
			if gotComment != comment {
				t.Errorf("comment %q, want %q", gotComment, comment)
			}
			k, err := NewKey(priv, gotComment)
			if err != nil {
				t.Fatal(err)
			}
			checkStoredKey(t, dir, k, wantFP, comment)

			if c.pass != "" {
				_, _, err := ParsePrivateKeyFile(data, passFunc("wrong", &called))
				if !errors.Is(err, ErrKeyPassphrase) {
					t.Errorf("wrong passphrase: %v", err)
				}
				if _, _, err := ParsePrivateKeyFile(data, nil); err == nil {
					t.Error("no passphrase func: accepted")
				}
			}
		})
	}
}

// TestImportPEM converts ssh-keygen keys to the PEM formats (PKCS#1,
// SEC 1, PKCS#8, and legacy encrypted PEM).
func TestImportPEM(t *testing.T) {
	needSSHKeygen(t)
	dir := t.TempDir()
	base := map[string][]string{
		"rsa":   {"-t", "rsa", "-b", "2048"},
		"ecdsa": {"-t", "ecdsa", "-b", "384"},
	}
	for typ, args := range base {
		orig := filepath.Join(dir, typ)
		sshKeygen(t, append(args, "-q", "-N", "", "-C", "c", "-f", orig)...)
		wantFP, _ := keygenFingerprint(t, orig+".pub")
		for _, c := range []struct{ format, pass, header string }{
			{"PEM", "", map[string]string{"rsa": "RSA PRIVATE KEY", "ecdsa": "EC PRIVATE KEY"}[typ]},
			{"PKCS8", "", "PRIVATE KEY"},
			{"PEM", "pem-pass", "Proc-Type: 4,ENCRYPTED"},
		} {
			name := typ + "-" + c.format + "-" + c.pass
			t.Run(name, func(t *testing.T) {
				file := filepath.Join(dir, name)
				mustWrite(t, file, mustRead(t, orig))
				sshKeygen(t, "-p", "-q", "-P", "", "-N", c.pass, "-m", c.format, "-f", file)
				data := mustRead(t, file)
				if !strings.Contains(string(data), c.header) {
					t.Fatalf("ssh-keygen wrote:\n%s", data)
				}
				var called bool
				priv, comment, err := ParsePrivateKeyFile(data, passFunc(c.pass, &called))
				if err != nil {
					t.Fatal(err)
				}
				if called != (c.pass != "") || comment != "" {
					t.Errorf("called %v comment %q", called, comment)
				}
				k, err := NewKey(priv, "imported")
				if err != nil {
					t.Fatal(err)
				}
				checkStoredKey(t, dir, k, wantFP, "imported")
				if c.pass != "" {
					if _, _, err := ParsePrivateKeyFile(data, passFunc("nope", &called)); !errors.Is(err, ErrKeyPassphrase) {
						t.Errorf("wrong passphrase: %v", err)
					}
				}
			})
		}
	}
}

func TestImportRejects(t *testing.T) {
	needSSHKeygen(t)
	dir := t.TempDir()
	rsa1024 := filepath.Join(dir, "rsa1024")
	sshKeygen(t, "-q", "-t", "rsa", "-b", "1024", "-N", "", "-f", rsa1024)
	_, _, err := ParsePrivateKeyFile(mustRead(t, rsa1024), nil)
	if !errors.Is(err, ErrUnsupportedKey) || !strings.Contains(err.Error(), "1024 bits") {
		t.Errorf("rsa 1024: %v", err)
	}
	// A DSA key (ssh-keygen still makes them, in OpenSSH format) is
	// refused as one, and an encrypted one before its passphrase is
	// asked for: the key's type is in the clear part of the file.
	for _, pass := range []string{"", "dsa pass"} {
		dsa := filepath.Join(dir, "dsa"+strconv.Itoa(len(pass)))
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "dsa", "-N", pass, "-f", dsa).CombinedOutput(); err != nil {
			t.Logf("ssh-keygen cannot make DSA keys here: %s", out)
			break
		}
		asked := false
		_, _, err := ParsePrivateKeyFile(mustRead(t, dsa), passFunc(pass, &asked))
		if !errors.Is(err, ErrUnsupportedKey) || !strings.Contains(err.Error(), "DSA keys are not accepted") || asked {
			t.Errorf("dsa key (passphrase %q): %v (its passphrase asked: %v)", pass, err, asked)
		}
	}
	for _, garbage := range []string{"", "hello", "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n"} {
		if _, _, err := ParsePrivateKeyFile([]byte(garbage), nil); err == nil {
			t.Errorf("%q accepted", garbage)
		}
	}
	pub := mustRead(t, rsa1024+".pub")
	if _, _, err := ParsePrivateKeyFile(pub, nil); err == nil {
		t.Error("public key accepted")
	}
}

func TestNewKeyRejects(t *testing.T) {
	p224, err := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewKey(p224, ""); !errors.Is(err, ErrUnsupportedKey) {
		t.Errorf("P-224: %v", err)
	}
	if _, err := NewKey("not a key", ""); !errors.Is(err, ErrUnsupportedKey) {
		t.Errorf("string: %v", err)
	}
	if _, err := NewKey(nil, ""); err == nil {
		t.Error("nil accepted")
	}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	bad := ed25519.PrivateKey(append([]byte(nil), priv...))
	bad[63] ^= 1 // public half no longer matches the seed
	if _, err := NewKey(bad, ""); err == nil {
		t.Error("inconsistent ed25519 key accepted")
	}
	if _, err := NewKey(&priv, strings.Repeat("c", maxComment+1)); err == nil {
		t.Error("long comment accepted")
	}
	k, err := NewKey(&priv, "pointer form")
	if err != nil {
		t.Fatal(err)
	}
	back, err := k.PrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	if !priv.Equal(back) {
		t.Error("round trip changed the key")
	}
}

// A legacy encrypted PEM key tells a wrong passphrase only by its
// padding, which about one wrong passphrase in 256 passes: what it then
// decrypts to is garbage, and that is a wrong passphrase too, not a
// damaged key.
func TestLegacyPEMWrongPassphraseThatPassesThePadding(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pem")
	sshKeygen(t, "-q", "-t", "ecdsa", "-m", "PEM", "-N", "right", "-f", file)
	data := mustRead(t, file)
	wrong := ""
	for i := 0; i < 100000 && wrong == ""; i++ {
		p := fmt.Sprintf("wrong-%d", i)
		if _, err := ssh.ParseRawPrivateKeyWithPassphrase(data, []byte(p)); err != nil && !errors.Is(err, x509.IncorrectPasswordError) {
			wrong = p
		}
	}
	if wrong == "" {
		t.Fatal("no wrong passphrase passed the padding check")
	}
	var called bool
	if _, _, err := ParsePrivateKeyFile(data, passFunc(wrong, &called)); !errors.Is(err, ErrKeyPassphrase) {
		t.Fatalf("passphrase %q: %v, want ErrKeyPassphrase", wrong, err)
	}
}
