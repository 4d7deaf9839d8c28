package sshagent

import (
	"encoding/binary"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// slowPKCS11Helper is an ssh-pkcs11-helper whose token logs in slowly:
// it reads the request to load the provider, says so (the file
// "started" in dir), waits for the file "gate", then offers the public
// key in the file "key" (hex).
func slowPKCS11Helper(dir string) int {
	var hdr [4]byte
	if _, err := io.ReadFull(os.Stdin, hdr[:]); err != nil {
		return 2
	}
	if _, err := io.ReadFull(os.Stdin, make([]byte, binary.BigEndian.Uint32(hdr[:]))); err != nil {
		return 3
	}
	os.WriteFile(filepath.Join(dir, "started"), nil, 0o600)
	for {
		if _, err := os.Stat(filepath.Join(dir, "gate")); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	h, _ := os.ReadFile(filepath.Join(dir, "key"))
	blob, _ := hex.DecodeString(string(h))
	body := append([]byte{msgIdentitiesAnswer}, ssh.Marshal(struct {
		N     uint32
		Blob  []byte
		Label string
	}{1, blob, "slow token"})...)
	os.Stdout.Write(binary.BigEndian.AppendUint32(nil, uint32(len(body))))
	os.Stdout.Write(body)
	io.Copy(io.Discard, os.Stdin)
	os.WriteFile(filepath.Join(dir, "ended"), nil, 0o600) // the agent let go of it
	return 0
}

// fakeToken sets up slowPKCS11Helper as the ssh-pkcs11-helper, and
// returns its directory, the provider library to name, and the key the
// token holds. Its login waits until the file "gate" is in dir.
func fakeToken(t *testing.T) (dir, lib string, key ssh.PublicKey) {
	dir = t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	helper := filepath.Join(dir, "helper.sh")
	script := "#!/bin/sh\nSSHAGENT_TEST_PKCS11='" + dir + "' exec '" + exe + "'\n"
	if err := os.WriteFile(helper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSH_PKCS11_HELPER", helper)
	lib = filepath.Join(dir, "libtoken.so")
	if err := os.WriteFile(lib, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	key = newHost(t).PublicKey()
	if err := os.WriteFile(filepath.Join(dir, "key"), []byte(hex.EncodeToString(key.Marshal())), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, lib, key
}

// waitForFile waits for path to be there; failing says what after 20s.
func waitForFile(t *testing.T, path, failing string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(failing + " after 20s")
		}
	}
}

// The keys of a token whose login was under way when every key was
// removed (SIGUSR1, or ssh-add -D on the person's socket) are not added
// after the removal: every key goes, also one whose add was asked for
// before, as with OpenSSH's agent, which answers that request first and
// then removes every key.
func TestWipeDuringATokensLogin(t *testing.T) {
	for _, tc := range []struct {
		name   string
		remove func(t *testing.T, ts *testServer)
	}{
		{"SIGUSR1", func(_ *testing.T, ts *testServer) { ts.srv.Keys.Wipe() }},
		{"ssh-add -D", func(t *testing.T, ts *testServer) {
			if r := roundTrip(t, ts.rawConn(t), []byte{msgRemoveAllIdentities}); r[0] != msgSuccess {
				t.Fatalf("ssh-add -D: reply %d", r[0])
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, lib, _ := fakeToken(t)
			ts := startServerWith(t, func(s *Server) { s.Providers = dir + "/*" })
			c := ts.rawConn(t)
			replied := make(chan byte, 1)
			go func() {
				r := roundTrip(t, c, append([]byte{msgAddSmartcardKey}, ssh.Marshal(struct{ P, PIN string }{lib, "1234"})...))
				replied <- r[0]
			}()
			waitForFile(t, filepath.Join(dir, "started"), "the helper has not read its request")
			tc.remove(t, ts)
			if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			r := <-replied
			if ids, _ := ts.srv.Keys.Identities(); len(ids) != 0 {
				t.Fatalf("the token's keys were added after every key was removed (reply %d): %d keys held", r, len(ids))
			}
			if r != msgFailure {
				t.Fatalf("the add across the removal: reply %d", r)
			}
		})
	}
}
