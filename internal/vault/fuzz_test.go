package vault

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/internal/sshkey"
)

// seedVault returns a real vault file (Create with the real Argon2id at the
// floor, one key, metadata and a secret) and its body plaintext.
func seedVault(f *testing.F) (file, plain []byte) {
	f.Helper()
	v, path := newTestVault(f)
	file = mustRead(f, path)
	fp, err := parseFile(file)
	if err != nil {
		f.Fatal(err)
	}
	plain, err = unseal(v.dek, fp.body, fp.bodyAAD)
	if err != nil {
		f.Fatal(err)
	}
	return file, plain
}

// FuzzParse feeds the file framing (magic, version, header fields,
// section lengths) arbitrary bytes. It must never panic, must refuse with
// ErrCorrupt, and every accepted input must re-encode to itself.
func FuzzParse(f *testing.F) {
	file, _ := seedVault(f)
	f.Add(file)
	f.Add(file[:prefixSize+10])
	f.Add([]byte(fileMagic))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		fp, err := parseFile(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not match ErrCorrupt: %v", err)
			}
		} else {
			if !bytes.Equal(assemble(fp.bodyAAD, fp.body), data) {
				t.Fatal("sections do not reassemble to the input")
			}
			aad, err := fp.hdr.marshal()
			if err != nil {
				t.Fatalf("accepted header does not re-encode: %v", err)
			}
			if !bytes.Equal(aad, fp.aad) {
				t.Fatal("header encoding is not canonical")
			}
		}
		// The header alone (ReadMeta) must agree with the whole file.
		h, n, err := parsePrefix(data)
		if err == nil && fp != nil && (n != len(fp.aad) || h.id != fp.hdr.id) {
			t.Fatal("parsePrefix disagrees with parseFile")
		}
		if err != nil && fp != nil {
			t.Fatalf("parsePrefix refused what parseFile accepted: %v", err)
		}
	})
}

// FuzzBody feeds the body decoder (the plaintext after decryption).
func FuzzBody(f *testing.F) {
	_, plain := seedVault(f)
	f.Add(plain)
	empty, _ := encodeBody(&body{})
	f.Add(empty)
	f.Add([]byte{bodyVersion})
	withCert := newEd25519Key(f, "c")
	withCert.Certs = [][]byte{certFor(f, withCert, time.Now().Add(time.Hour)).Marshal()}
	if p, err := encodeBody(&body{keys: []Key{withCert}}); err == nil {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := decodeBody(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not match ErrCorrupt: %v", err)
			}
			return
		}
		out, err := encodeBody(b)
		if err != nil {
			t.Fatalf("accepted body does not re-encode: %v", err)
		}
		if !bytes.Equal(out, data) {
			t.Fatal("body encoding is not canonical")
		}
	})
}

// FuzzOpenSSHContainer feeds the openssh-key-v1 reader (the container,
// then a private section) arbitrary bytes: no panic, and an accepted
// container's fields survive marshalPlain.
func FuzzOpenSSHContainer(f *testing.F) {
	for _, name := range []string{"ed25519_1", "ed25519_1_pw", "ecdsa_n_pw"} {
		raw, err := decodeOpenSSHPEM(mustRead(f, "testdata/openssh/"+name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Add([]byte(opensshMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		privateSectionInfo(data)
		o, err := parseOpenSSHContainer(data)
		if err != nil {
			return
		}
		privateSectionInfo(o.PrivKey)
		again, err := parseOpenSSHContainer(o.marshalPlain(o.PrivKey))
		if err != nil || again.CipherName != "none" || !bytes.Equal(again.PubKey, o.PubKey) || !bytes.Equal(again.PrivKey, o.PrivKey) {
			t.Fatalf("marshalPlain does not round-trip: %v", err)
		}
	})
}

// FuzzParsePrivateKeyFile reads a private key file as "postern vault
// add" does. A key read passes sshkey.Check, and written again as
// ssh-keygen writes it, it reads back as the same key with the same
// comment.
func FuzzParsePrivateKeyFile(f *testing.F) {
	for _, name := range []string{"ed25519_1", "ed25519_1_pw", "ecdsa_n_pw"} {
		f.Add(mustRead(f, "testdata/openssh/"+name))
	}
	ec, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	der, _ := x509.MarshalECPrivateKey(ec)
	f.Add(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(ec)
	f.Add(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}))
	f.Add([]byte("-----BEGIN DSA PRIVATE KEY-----\nAAAA\n-----END DSA PRIVATE KEY-----\n"))
	pass := func() ([]byte, error) { return []byte("mekmitasdigoat"), nil }
	f.Fuzz(func(t *testing.T, data []byte) {
		priv, comment, err := ParsePrivateKeyFile(bytes.Clone(data), pass)
		if err != nil {
			return
		}
		if _, err := sshkey.Check(priv); err != nil {
			t.Fatalf("a key read that sshkey.Check refuses: %v", err)
		}
		block, err := ssh.MarshalPrivateKey(priv, comment)
		if err != nil {
			t.Fatalf("a key read does not write: %v", err)
		}
		again, comment2, err := ParsePrivateKeyFile(pem.EncodeToMemory(block), nil)
		if err != nil {
			t.Fatalf("a key read, written, does not read back: %v", err)
		}
		if !priv.(interface{ Equal(crypto.PrivateKey) bool }).Equal(again) || comment2 != comment {
			t.Fatalf("a key read (comment %q), written and read back, is another key (comment %q)", comment, comment2)
		}
	})
}

// FuzzParseDataKey reads a data key kept in the keychain, which another
// program of the person's can write: one read exports to the same bytes.
func FuzzParseDataKey(f *testing.F) {
	k := &DataKey{key: bytes.Repeat([]byte{7}, keySize)}
	f.Add(k.Export())
	f.Add([]byte(exportMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := ParseDataKey(b)
		if err != nil {
			return
		}
		if !k.usable() || !bytes.Equal(k.Export(), b) {
			t.Fatalf("%x read as a data key that exports as %x", b, k.Export())
		}
	})
}
