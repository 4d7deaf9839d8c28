package knownhosts

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

func newKey(t testing.TB) (ssh.PublicKey, ssh.Signer) {
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	s, _ := ssh.NewSignerFromKey(k)
	return s.PublicKey(), s
}

func hashName(name string) string {
	salt := make([]byte, 20)
	rand.Read(salt)
	m := hmac.New(sha1.New, salt)
	m.Write([]byte(name))
	return "|1|" + base64.StdEncoding.EncodeToString(salt) + "|" + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func line(hosts string, k ssh.PublicKey) string {
	return hosts + " " + string(ssh.MarshalAuthorizedKey(k))
}

func TestLookup(t *testing.T) {
	prod, _ := newKey(t)
	gh, _ := newKey(t)
	revoked, _ := newKey(t)
	ca, caSigner := newKey(t)
	hostCertKey, _ := newKey(t)
	dir := t.TempDir()
	f := filepath.Join(dir, "known_hosts")
	content := "# comment\n" +
		line("prod-db-1,10.0.0.5,*.wild", prod) +
		line(hashName("github.com"), gh) +
		"@revoked " + line("*", revoked) +
		"@cert-authority " + line("*.corp,!bad.corp", ca) +
		"garbage line\n"
	os.WriteFile(f, []byte(content), 0o600)
	db := Open([]string{f, filepath.Join(dir, "missing")})

	if r := db.Lookup(prod, nil); !slices.Equal(r.Names, []string{"prod-db-1", "10.0.0.5"}) {
		t.Fatalf("plain names: %+v", r)
	}
	if r := db.Lookup(gh, nil); len(r.Names) != 0 || r.Hashed != 1 {
		t.Fatalf("hashed without candidates: %+v", r)
	}
	if r := db.Lookup(gh, []string{"evil.example", "github.com"}); !slices.Equal(r.Names, []string{"github.com"}) {
		t.Fatalf("hashed with candidates: %+v", r)
	}
	// A candidate that hashes to an entry of another key is not a name.
	if r := db.Lookup(prod, []string{"github.com"}); slices.Contains(r.Names, "github.com") {
		t.Fatalf("claimed name accepted for the wrong key: %+v", r)
	}
	if r := db.Lookup(revoked, nil); !r.Revoked {
		t.Fatal("revoked key not reported")
	}
	cert := &ssh.Certificate{Key: hostCertKey, CertType: ssh.HostCert, ValidPrincipals: []string{"web.corp", "bad.corp", "other.example"}, ValidBefore: ssh.CertTimeInfinity}
	cert.SignCert(rand.Reader, caSigner)
	if r := db.Lookup(cert, nil); !slices.Equal(r.Names, []string{"web.corp"}) {
		t.Fatalf("certificate principals: %+v", r)
	}
	// A revoked key is refused also when a certificate presents it, as
	// ssh refuses it, whoever signed the certificate and whatever its
	// type (session-bind takes any).
	_, other := newKey(t)
	for name, s := range map[string]ssh.Signer{"the trusted CA": caSigner, "another CA": other} {
		for _, typ := range []uint32{ssh.HostCert, ssh.UserCert} {
			c := &ssh.Certificate{Key: revoked, CertType: typ, ValidPrincipals: []string{"web.corp"}, ValidBefore: ssh.CertTimeInfinity}
			c.SignCert(rand.Reader, s)
			if r := db.Lookup(c, nil); !r.Revoked || len(r.Names) != 0 {
				t.Fatalf("a certificate (type %d) of a revoked key, signed by %s: %+v", typ, name, r)
			}
		}
	}
	// Files are reloaded when they change.
	newKey2, _ := newKey(t)
	os.WriteFile(f, []byte(line("new-host", newKey2)), 0o600)
	os.Chtimes(f, timeFuture(), timeFuture())
	if r := db.Lookup(newKey2, nil); !slices.Equal(r.Names, []string{"new-host"}) {
		t.Fatalf("reload: %+v", r)
	}
}

func timeFuture() time.Time { return time.Now().Add(time.Hour) }

// A line too long for a key (a damaged file, a binary blob appended) is
// passed over like any other malformed line: the @revoked lines after it
// still refuse their keys.
func TestLongLineKeepsLaterRevocations(t *testing.T) {
	revoked, _ := newKey(t)
	p := filepath.Join(t.TempDir(), "known_hosts")
	long := make([]byte, 2<<20)
	for i := range long {
		long[i] = 'x'
	}
	text := "# damaged\n" + string(long) + "\n@revoked * " + string(ssh.MarshalAuthorizedKey(revoked))
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	db := Open([]string{p})
	if !db.Lookup(revoked, nil).Revoked || !db.Revokes() {
		t.Fatalf("a @revoked line after a 2 MiB line refuses nothing: Lookup %+v, Revokes %v", db.Lookup(revoked, nil), db.Revokes())
	}
}

// An @cert-authority line's host patterns mean what they mean to OpenSSH
// (match_pattern: '*' and '?' only): a principal is named only where ssh
// itself would trust the authority for it. Read as path.Match patterns,
// "db[12].corp" trusted the authority for db1.corp, which OpenSSH reads
// as the one literal name; and host names match in any case.
func TestCertAuthorityPatternsAreOpenSSHs(t *testing.T) {
	ca, caSigner := newKey(t)
	hostKey, _ := newKey(t)
	f := filepath.Join(t.TempDir(), "known_hosts")
	os.WriteFile(f, []byte("@cert-authority "+line(`db[12].corp,*.lab,a\*`, ca)), 0o600)
	db := Open([]string{f})
	cert := &ssh.Certificate{Key: hostKey, CertType: ssh.HostCert, ValidBefore: ssh.CertTimeInfinity,
		ValidPrincipals: []string{"db1.corp", "db[12].corp", "rack/7.lab", "Web.LAB", "a*", `a\b`}}
	cert.SignCert(rand.Reader, caSigner)
	want := []string{"db[12].corp", "rack/7.lab", "Web.LAB", `a\b`}
	if r := db.Lookup(cert, nil); !slices.Equal(r.Names, want) {
		t.Fatalf("names for the certificate's principals: %q, want %q", r.Names, want)
	}
}
