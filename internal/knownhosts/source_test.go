package knownhosts

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

func TestKeysForAndNamed(t *testing.T) {
	prod, _ := newKey(t)
	prodRSA, _ := newKey(t)
	other, _ := newKey(t)
	ca, _ := newKey(t)
	text := "# ssh-keyscan output and known_hosts lines\n" +
		line("prod-db-1,10.0.0.5", prod) +
		line(hashName("prod-db-1"), prodRSA) +
		line(hashName("[prod-db-1]:2222"), other) +
		line("*.corp", other) +
		"@revoked " + line("prod-db-1", other) +
		"@cert-authority " + line("prod-db-1", ca) +
		line("web", other) +
		"not a line\n"
	found := KeysFor([]byte(text), "prod-db-1", true)
	if len(found) != 2 || !bytes.Equal(found[0].Key.Marshal(), prod.Marshal()) || found[0].Hashed ||
		!bytes.Equal(found[1].Key.Marshal(), prodRSA.Marshal()) || !found[1].Hashed || found[1].Line != 3 {
		t.Fatalf("KeysFor(prod-db-1) = %+v", found)
	}
	if found := KeysFor([]byte(text), "[prod-db-1]:2222", true); len(found) != 1 || !found[0].Hashed {
		t.Fatalf("KeysFor([prod-db-1]:2222) = %+v", found)
	}
	if found := KeysFor([]byte(text), "x.corp", true); len(found) != 0 {
		t.Fatalf("a pattern gave a key: %+v", found)
	}
	// A public key file names no host: its keys are taken for the name.
	pub := "ssh-ed25519 " + string(bytes.Fields([]byte(line("h", prod)))[2]) + " root@prod-db-1\n"
	if found := KeysFor([]byte(pub), "prod-db-1", true); len(found) != 1 || !found[0].Bare {
		t.Fatalf("a .pub file: %+v", found)
	}
	// In a known_hosts file, such a line names no host.
	if found := KeysFor([]byte(text+pub), "x.corp", false); len(found) != 0 {
		t.Fatalf("a public key line of a known_hosts file: %+v", found)
	}
	named := Named([]byte(text))
	var names []string
	for _, f := range named {
		names = append(names, f.Name)
	}
	if len(names) != 3 || names[0] != "prod-db-1" || names[1] != "10.0.0.5" || names[2] != "web" {
		t.Fatalf("Named = %v", names)
	}
	if bad := Malformed([]byte(text + "\n# a comment\nweb ssh-ed25519 AAAA-not-base64\n" + pub)); len(bad) != 2 || bad[0] != 9 || bad[1] != 12 {
		t.Fatalf("Malformed = %v, want [9 12]", bad)
	}
	if bad := Malformed([]byte("# one\n" + strings.Repeat("x", 2<<20) + "\n" + line("web", prod))); len(bad) != 1 || bad[0] != 2 {
		t.Fatalf("a line too long to read: Malformed = %v, want [2]", bad)
	}
}

func FuzzKeysFor(f *testing.F) {
	f.Add([]byte("prod-db-1 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJdD7y3aLq454yWBdwLWbieU1ebz9/cu7/QEXn9OIeZJ\n"), "prod-db-1")
	f.Add([]byte("|1|abc|def ssh-ed25519 AAAA\n@revoked * ssh-rsa AAAA\n"), "x")
	f.Fuzz(func(t *testing.T, b []byte, name string) {
		for _, found := range KeysFor(b, name, true) {
			if found.Key == nil || found.Name != name {
				t.Fatalf("%+v", found)
			}
		}
		Named(b)
		for _, no := range Malformed(b) {
			if no < 1 || no > bytes.Count(b, []byte("\n"))+1 {
				t.Fatalf("malformed line %d of %d", no, bytes.Count(b, []byte("\n"))+1)
			}
		}
	})
}

// FuzzLookup reads known_hosts text as the gateway does and looks up
// every key it holds. A key an @revoked line holds is
// revoked; every name given is the candidate, one of the file's own or
// a certificate's principal, and a plain line's names are given for
// its key.
func FuzzLookup(f *testing.F) {
	prod, _ := newKey(f)
	other, _ := newKey(f)
	f.Add([]byte(line("prod-db-1,10.0.0.5", prod)+line(hashName("prod-db-1"), other)+"@revoked "+line("*", other)), "prod-db-1")
	f.Add([]byte("@cert-authority "+line("*.corp,!x.corp", prod)+line("PROD-db-1", prod)+"@revoked\t"+line("h", prod)), "x.corp")
	f.Add([]byte("@unknown "+line("a", prod)+"ssh-ed25519 "+string(bytes.Fields([]byte(line("h", other)))[2])+"\n"), "a")
	f.Fuzz(func(t *testing.T, text []byte, candidate string) {
		db := &DB{entries: map[string][]entry{}} // as load leaves it, without a file to read each time
		db.parse(text)
		eachLine(text, func(l entryLine) {
			r := db.Lookup(l.key, []string{candidate})
			if l.marker == "@revoked" && !r.Revoked {
				t.Fatalf("line %d revokes %s, which Lookup does not find revoked", l.no, ssh.FingerprintSHA256(l.key))
			}
			var principals []string
			if c, ok := l.key.(*ssh.Certificate); ok {
				principals = c.ValidPrincipals
			}
			for _, n := range r.Names {
				if n != candidate && !bytes.Contains(text, []byte(n)) && !slices.Contains(principals, n) {
					t.Fatalf("%s named %q, which the file does not hold", ssh.FingerprintSHA256(l.key), n)
				}
			}
			if l.marker != "" || r.Revoked {
				return
			}
			for _, h := range l.hosts {
				if isName(h) && !strings.HasPrefix(h, "|") && !slices.Contains(r.Names, h) {
					t.Fatalf("line %d names %s %q, which Lookup does not give (%q)", l.no, ssh.FingerprintSHA256(l.key), h, r.Names)
				}
			}
		})
	})
}

// Fields are split on tabs as well as spaces, as ssh splits them: a
// hand-written @revoked line with a tab is a revocation, not a malformed
// line, and a tab-separated entry gives its key.
func TestTabsSeparateFields(t *testing.T) {
	prod, _ := newKey(t)
	bad, _ := newKey(t)
	tabbed := func(hosts string, k ssh.PublicKey) string {
		return strings.Replace(line(hosts, k), " ", "\t", 1)
	}
	text := "@revoked\t" + tabbed("*", bad) + tabbed("prod-db-1", prod)
	if m := Malformed([]byte(text)); len(m) != 0 {
		t.Fatalf("tab-separated lines read as malformed: lines %v", m)
	}
	if found := KeysFor([]byte(text), "prod-db-1", false); len(found) != 1 || !bytes.Equal(found[0].Key.Marshal(), prod.Marshal()) {
		t.Fatalf("KeysFor(prod-db-1) over a tab = %+v", found)
	}
	if r := Revoked([]byte(text)); len(r) != 1 || !bytes.Equal(r[0].Key.Marshal(), bad.Marshal()) || r[0].Line != 1 {
		t.Fatalf("Revoked = %+v, want the key of line 1", r)
	}
}
