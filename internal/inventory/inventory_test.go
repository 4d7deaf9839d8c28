package inventory

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

func newKey(t testing.TB) ssh.PublicKey {
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func ptr(s string) *string { return &s }

func TestChangesAndLookup(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	prod, prod2, web := newKey(t), newKey(t), newKey(t)
	var inv *Inventory
	inv, err := inv.With("prod-db-1", ptr("production"), []Key{NewKey(prod, "test", now)}, now)
	if err != nil {
		t.Fatal(err)
	}
	if inv, err = inv.With("prod-db-1", nil, []Key{NewKey(prod2, "test", now)}, now); err != nil {
		t.Fatal(err)
	}
	if inv, err = inv.With("staging-web", nil, []Key{NewKey(web, "test", now)}, now); err != nil {
		t.Fatal(err)
	}
	for _, k := range []ssh.PublicKey{prod, prod2} {
		if names, classes := inv.Lookup(k); len(names) != 1 || names[0] != "prod-db-1" || len(classes) != 1 || classes[0] != "production" {
			t.Fatalf("lookup: %v %v", names, classes)
		}
	}
	if names, classes := inv.Lookup(web); len(names) != 1 || len(classes) != 0 {
		t.Fatalf("staging-web: %v %v", names, classes)
	}
	if names, _ := inv.Lookup(newKey(t)); names != nil {
		t.Fatalf("an unknown key has names %v", names)
	}
	// A key belongs to one host: it cannot take a second name (and a
	// second class).
	if _, err := inv.With("innocent", nil, []Key{NewKey(prod, "test", now)}, now); !errors.Is(err, ErrKeyTaken) {
		t.Fatalf("a production key under another name: %v", err)
	}
	// A host certificate is looked up by the key it certifies.
	cert := &ssh.Certificate{Key: prod, CertType: ssh.HostCert, ValidPrincipals: []string{"anything"}}
	if names, _ := inv.Lookup(cert); len(names) != 1 || names[0] != "prod-db-1" {
		t.Fatalf("certificate: %v", names)
	}
	// The file round-trips, and is written atomically.
	path := filepath.Join(t.TempDir(), "hosts.json")
	if err := inv.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(back.Marshal()) != string(inv.Marshal()) {
		t.Fatalf("round trip:\n%s\n%s", back.Marshal(), inv.Marshal())
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode())
	}
	// Removing a host frees its keys.
	if inv, err = inv.Without("prod-db-1"); err != nil {
		t.Fatal(err)
	}
	if names, _ := inv.Lookup(prod); names != nil {
		t.Fatal("a removed host still names its key")
	}
	if _, err := inv.Without("prod-db-1"); err == nil {
		t.Fatal("removed twice")
	}
	if empty, err := Load(filepath.Join(t.TempDir(), "none")); err != nil || empty.Len() != 0 {
		t.Fatalf("missing file: %v %v", empty, err)
	}
}

func TestNamesAndClassesChecked(t *testing.T) {
	now := time.Now()
	k := []Key{NewKey(newKey(t), "test", now)}
	var inv *Inventory
	for _, name := range []string{"", "-oProxyCommand=x", "prod\ndb", "prod db", "prod\x1b[2K", "prod\u202edb", strings.Repeat("a", 256)} {
		if _, err := inv.With(name, nil, k, now); err == nil {
			t.Errorf("name %q accepted", name)
		}
	}
	for _, name := range []string{"prod-db-1", "10.0.0.5", "[10.0.0.5]:2222", "db.example.com", "fe80::1"} {
		if _, err := inv.With(name, nil, k, now); err != nil {
			t.Errorf("name %q refused: %v", name, err)
		}
	}
	for _, class := range []string{"Production", "prod uction", "prod\n", strings.Repeat("a", 33)} {
		if _, err := inv.With("h", ptr(class), k, now); err == nil {
			t.Errorf("class %q accepted", class)
		}
	}
	if _, err := inv.With("h", nil, nil, now); err == nil {
		t.Error("a host without keys accepted")
	}
}

func TestDamagedFileRefused(t *testing.T) {
	k := newKey(t)
	good := NewKey(k, "test", time.Now())
	for name, body := range map[string]string{
		"not json":            "hosts",
		"wrong version":       `{"version":2,"hosts":[]}`,
		"unknown field":       `{"version":1,"hosts":[],"extra":1}`,
		"bad name":            `{"version":1,"hosts":[{"name":"a b","keys":[{"key":"` + good.Key + `","fingerprint":"` + good.Fingerprint + `"}]}]}`,
		"bad key":             `{"version":1,"hosts":[{"name":"a","keys":[{"key":"ssh-ed25519 AAAA","fingerprint":"x"}]}]}`,
		"wrong fingerprint":   `{"version":1,"hosts":[{"name":"a","keys":[{"key":"` + good.Key + `","fingerprint":"SHA256:x"}]}]}`,
		"key twice":           `{"version":1,"hosts":[{"name":"a","keys":[{"key":"` + good.Key + `","fingerprint":"` + good.Fingerprint + `"}]},{"name":"b","keys":[{"key":"` + good.Key + `","fingerprint":"` + good.Fingerprint + `"}]}]}`,
		"key twice in a host": `{"version":1,"hosts":[{"name":"a","keys":[{"key":"` + good.Key + `","fingerprint":"` + good.Fingerprint + `"},{"key":"` + good.Key + `","fingerprint":"` + good.Fingerprint + `"}]}]}`,
		"name twice":          `{"version":1,"hosts":[{"name":"a","keys":[{"key":"` + good.Key + `","fingerprint":"` + good.Fingerprint + `"}]},{"name":"a","keys":[{"key":"` + good.Key + `","fingerprint":"` + good.Fingerprint + `"}]}]}`,
	} {
		if _, err := Parse([]byte(body)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// parseRef is Parse as a plain decoding of the whole file, every host
// checked after.
func parseRef(b []byte) (*Inventory, error) {
	var f struct {
		Version int    `json:"version"`
		Hosts   []Host `json:"hosts"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, err
	}
	if f.Version != version {
		return nil, errors.New("version")
	}
	for _, h := range f.Hosts {
		if err := checkHost(&h); err != nil {
			return nil, err
		}
	}
	inv := &Inventory{hosts: f.Hosts}
	if err := inv.index(); err != nil {
		return nil, err
	}
	return inv, nil
}

// FuzzParse reads an inventory file, which any program of the person's
// can write. It accepts what the plain decoding does, and a file
// accepted writes back to one that reads the same.
func FuzzParse(f *testing.F) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var inv *Inventory
	inv, _ = inv.With("prod-db-1", ptr("production"), []Key{NewKey(newKey(f), "test", now)}, now)
	inv, _ = inv.With("prod-db-2", nil, []Key{NewKey(newKey(f), "test", now)}, now)
	good := inv.Marshal()
	f.Add(good)
	f.Add([]byte(`{"version":1,"hosts":[]}`))
	f.Add([]byte(`{"hosts":null,"version":1}`))
	f.Add([]byte(`{"version":1,"hosts":[{},{}]}`))
	f.Add([]byte(`{"version":1,"hosts":{}}`))
	f.Add([]byte(`{"version":1,"hosts":[],"x":1}`))
	f.Add(bytes.Replace(good, []byte(`"hosts"`), []byte(`"hosts":[],"hosts"`), 1))
	f.Add(bytes.Replace(good, []byte(`"version": 1`), []byte(`"version": 2`), 1))
	f.Fuzz(func(t *testing.T, b []byte) {
		inv, err := Parse(b)
		want, werr := parseRef(b)
		if (err == nil) != (werr == nil) || (err == nil && string(inv.Marshal()) != string(want.Marshal())) {
			t.Fatalf("%s: Parse gives %v, the plain decoding %v", b, err, werr)
		}
		if err != nil {
			return
		}
		again, err := Parse(inv.Marshal())
		if err != nil || string(again.Marshal()) != string(inv.Marshal()) {
			t.Fatalf("an accepted file does not round-trip: %v", err)
		}
	})
}

// An inventory as large as Load reads, of millions of empty hosts, is
// refused at the first, not decoded whole.
func TestParseBounded(t *testing.T) {
	n := (maxFile - 40) / 3
	b := []byte(`{"version":1,"hosts":[` + strings.Repeat("{},", n-1) + "{}]}")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := Parse(b)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("accepted")
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 8*maxFile {
		t.Fatalf("refusing a %d-byte file of %d hosts took %d MB", len(b), n, grew>>20)
	}
}

// A file a newer postern wrote, with what that version added (a field of
// the file or of a host), is refused as that version, whatever field
// comes first: never as an unknown field, which reads as damage to mend
// by hand.
func TestNewerVersionIsNamed(t *testing.T) {
	good := NewKey(newKey(t), "test", time.Now())
	host := `{"name":"a","keys":[{"key":"` + good.Key + `","fingerprint":"` + good.Fingerprint + `"}],"labels":["x"]}`
	for name, body := range map[string]string{
		"new field":            `{"version":2,"hosts":[],"groups":{}}`,
		"new host field":       `{"version":2,"hosts":[` + host + `]}`,
		"version after hosts":  `{"hosts":[` + host + `],"version":2}`,
		"new field, version 7": `{"groups":{},"version":7,"hosts":[]}`,
	} {
		_, err := Parse([]byte(body))
		if err == nil || !strings.Contains(err.Error(), "newer postern") || !strings.Contains(err.Error(), "version") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A host is one name whatever its case, with or without the DNS root's
// trailing dot, as rules match names and ssh and DNS read them: adding
// it again under another spelling changes it (its class, its keys)
// rather than making a second host that its own key is refused to, and
// removing it by another spelling removes it.
func TestHostIsOneNameWhateverItsCase(t *testing.T) {
	now := time.Now()
	key := newKey(t)
	var inv *Inventory
	inv, err := inv.With("DB2.Example.COM", nil, []Key{NewKey(key, "test", now)}, now)
	if err != nil {
		t.Fatal(err)
	}
	next, err := inv.With("db2.example.com", ptr("production"), []Key{NewKey(key, "test", now)}, now)
	if err != nil {
		t.Fatalf("adding DB2.Example.COM again as db2.example.com: %v", err)
	}
	if hosts := next.Hosts(); len(hosts) != 1 || hosts[0].Name != "DB2.Example.COM" || hosts[0].Class != "production" {
		t.Fatalf("after adding DB2.Example.COM again as db2.example.com --class production: %+v", hosts)
	}
	if h, ok := next.Host("db2.example.com."); !ok || h.Name != "DB2.Example.COM" {
		t.Errorf("the host by another spelling: %+v, %v", h, ok)
	}
	gone, err := next.Without("db2.EXAMPLE.com.")
	if err != nil || gone.Len() != 0 {
		t.Fatalf("removing DB2.Example.COM as db2.EXAMPLE.com.: %v (%d hosts left)", err, gone.Len())
	}
}
