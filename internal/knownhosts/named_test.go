package knownhosts

import (
	"os"
	"path/filepath"
	"testing"
)

// KeysNamed finds the keys a name is given, plainly in any case or by a
// hashed entry, and none an @revoked line names or a pattern matches.
func TestKeysNamed(t *testing.T) {
	plain, _ := newKey(t)
	hashedKey, _ := newKey(t)
	revoked, _ := newKey(t)
	f := filepath.Join(t.TempDir(), "known_hosts")
	os.WriteFile(f, []byte(line("DB1,10.0.0.5", plain)+line(hashName("db2"), hashedKey)+line("db3", revoked)+"@revoked "+line("*", revoked)+line("db*", plain)), 0o600)
	db := Open([]string{f})
	for name, want := range map[string][]string{"db1": {string(plain.Marshal())}, "10.0.0.5": {string(plain.Marshal())}, "db2": {string(hashedKey.Marshal())}, "db3": nil, "db9": nil} {
		var got []string
		for _, k := range db.KeysNamed(name) {
			got = append(got, string(k.Marshal()))
		}
		if len(got) != len(want) || (len(want) > 0 && got[0] != want[0]) {
			t.Errorf("KeysNamed(%q): %d keys, want %d", name, len(got), len(want))
		}
	}
}
