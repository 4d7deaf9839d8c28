package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"io"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/sys/unix"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/harden"
)

// Every way the command line reads a secret (the vault's passphrase from
// a file or through askpass, a private key to add, the vault's data key
// from the keychain) first makes the process non-dumpable, as the
// gateway is: while postern unlock or postern vault add holds the
// secret, no other program of the user can read its memory or trace it.
func TestSecretsAreReadNonDumpable(t *testing.T) {
	var core unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CORE, &core); err != nil {
		t.Fatal(err)
	}
	dumpable := func() {
		if err := unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		dumpable()
		unix.Setrlimit(unix.RLIMIT_CORE, &core)
	})
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pass := write("pass", "correct horse\n", 0o600)
	t.Setenv("SSH_ASKPASS", write("askpass", "#!/bin/sh\necho correct horse\n", 0o755))
	t.Setenv("SSH_ASKPASS_REQUIRE", "force")
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKey(priv, "to add")
	if err != nil {
		t.Fatal(err)
	}
	key := write("id_ed25519", string(pem.EncodeToMemory(block)), 0o600)
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))

	for _, c := range []struct {
		what string
		read func() error
	}{
		{"the passphrase from a file", func() error {
			p, err := readPassphrase(pass, "")
			clear(p)
			return err
		}},
		{"the passphrase through askpass", func() error {
			p, err := readPassphrase("", "Enter passphrase for the postern vault: ")
			clear(p)
			return err
		}},
		{"a new passphrase from a file", func() error {
			p, err := passphraseFromFile(pass)
			clear(p)
			return err
		}},
		{"a private key to add", func() error {
			ch := &api.VaultChange{}
			defer ch.Wipe()
			return readKeyOrCert(ch, key, "", io.Discard)
		}},
		{"the data key from the keychain", func() error {
			k, _ := keychainKey("") // there is no vault: it fails, after
			clear(k)
			return nil
		}},
	} {
		dumpable()
		if err := c.read(); err != nil {
			t.Fatalf("reading %s: %v", c.what, err)
		}
		if d, err := harden.Dumpable(); err != nil || d {
			t.Errorf("after reading %s the process is dumpable: %v %v", c.what, d, err)
		}
	}
}
