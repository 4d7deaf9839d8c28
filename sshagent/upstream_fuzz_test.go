package sshagent

import (
	"bytes"
	"testing"

	"golang.org/x/crypto/ssh"
)

// FuzzParseIdentitiesAnswer feeds the parser of an upstream agent's
// identity list (the upstream is another program, which may be broken)
// whatever it may send: it never panics, takes no more keys than the list
// says nor more than maxUpstreamKeys, and each key it takes is the key
// whose blob the list held, marked as the upstream's.
func FuzzParseIdentitiesAnswer(f *testing.F) {
	keys := []ssh.PublicKey{newEd25519Key(f), newEd25519Key(f)}
	list := func(n uint32, entries ...[]byte) []byte {
		b := append([]byte{msgIdentitiesAnswer}, ssh.Marshal(struct{ N uint32 }{n})...)
		for _, e := range entries {
			b = append(b, e...)
		}
		return b
	}
	entry := func(blob []byte, comment string) []byte {
		return ssh.Marshal(struct {
			Blob    []byte
			Comment string
		}{blob, comment})
	}
	f.Add(list(0))
	f.Add(list(1, entry(keys[0].Marshal(), "yubikey")))
	f.Add(list(2, entry(keys[0].Marshal(), "a"), entry(keys[1].Marshal(), "b\x1b[2J")))
	f.Add(list(1, entry([]byte("not a key"), "x")))
	f.Add(list(2, entry(keys[0].Marshal(), "a")))
	f.Add(list(1<<31, entry(keys[0].Marshal(), "a")))
	f.Add([]byte{msgFailure})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, resp []byte) {
		ids, err := parseIdentitiesAnswer(resp)
		if err != nil {
			if ids != nil {
				t.Fatalf("keys with an error: %v", err)
			}
			return
		}
		if len(ids) > maxUpstreamKeys || len(ids) > len(resp) {
			t.Fatalf("%d keys from %d bytes", len(ids), len(resp))
		}
		for _, id := range ids {
			if id.Source != Upstream || !bytes.Contains(resp, id.Key.Marshal()) {
				t.Fatalf("a key that is not the list's: %+v", id)
			}
		}
	})
}
