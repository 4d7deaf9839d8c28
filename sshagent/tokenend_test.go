package sshagent

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/ssh"
)

// A token's ssh-pkcs11-helper, logged in with the PIN, stops once the
// last of the token's keys leaves the agent, however it leaves, as
// OpenSSH's agent ends its helper: the token's session does not outlive
// the keys the person removed.
func TestTokenHelperEndsWithItsLastKey(t *testing.T) {
	for _, tc := range []struct {
		name   string
		remove func(ts *testServer, key ssh.PublicKey) []byte // the request; nil when done directly
	}{
		{"ssh-add -D", func(*testServer, ssh.PublicKey) []byte { return []byte{msgRemoveAllIdentities} }},
		{"ssh-add -d", func(_ *testServer, key ssh.PublicKey) []byte {
			return append([]byte{msgRemoveIdentity}, ssh.Marshal(keyBlobMsg{KeyBlob: key.Marshal()})...)
		}},
		{"SIGUSR1", func(ts *testServer, _ ssh.PublicKey) []byte { ts.srv.Keys.Wipe(); return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, lib, key := fakeToken(t)
			if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			ts := startServerWith(t, func(s *Server) { s.Providers = dir + "/*" })
			c := ts.rawConn(t)
			if r := roundTrip(t, c, append([]byte{msgAddSmartcardKey}, ssh.Marshal(struct{ P, PIN string }{lib, "1234"})...)); r[0] != msgSuccess {
				t.Fatalf("adding the token's keys: reply %d", r[0])
			}
			if req := tc.remove(ts, key); req != nil {
				if r := roundTrip(t, c, req); r[0] != msgSuccess {
					t.Fatalf("removing the token's key: reply %d", r[0])
				}
			}
			if ids, _ := ts.srv.Keys.Identities(); len(ids) != 0 {
				t.Fatalf("%d keys held after the removal", len(ids))
			}
			waitForFile(t, filepath.Join(dir, "ended"), "the token's helper still runs, logged in, with none of its keys held")
		})
	}
}
