package knownhosts

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// ssh takes a host name in any case and writes and hashes it in lower
// case: a name given in another case finds its entries, plain and
// hashed (as ssh-keygen -H hashes them).
func TestKeysForIgnoresCase(t *testing.T) {
	prod, _ := newKey(t)
	dir := t.TempDir()
	plain := line("prod-db-1.example.com", prod)
	f := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(f, []byte(plain), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("ssh-keygen", "-q", "-H", "-f", f).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen -H: %v: %s", err, out)
	}
	hashed, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	for what, text := range map[string]string{"plain": plain, "hashed": string(hashed)} {
		if found := KeysFor([]byte(text), "Prod-DB-1.Example.COM", false); len(found) != 1 || found[0].Name != "Prod-DB-1.Example.COM" {
			t.Errorf("a %s entry, the name in another case: %+v", what, found)
		}
	}
}
