package gateway

import (
	"bytes"
	"testing"
	"time"

	"github.com/postern/postern/internal/vault"
)

// sealedReader reads what the gateway sealed into the vault file at path,
// for tests that wait for a value to be sealed. Each open derives the
// key (a fifth of a second of both cores at the floor parameters, taken
// from the gateway whose work is awaited), so the file is opened again
// only once it has changed (stampOf, as the gateway's own watch tells
// its saves).
type sealedReader struct {
	t     *testing.T
	path  string
	pass  []byte
	stamp fileStamp
	v     *vault.Vault // the copy last opened; nil when none could be
}

func newSealedReader(t *testing.T, path string, pass []byte) *sealedReader {
	r := &sealedReader{t: t, path: path, pass: pass}
	t.Cleanup(r.drop)
	return r
}

// secret returns the named secret of the vault as the file holds it now,
// or nil while it cannot be opened (the gateway may hold it).
func (r *sealedReader) secret(name string) []byte {
	if st, ok := stampOf(r.path); !ok || r.v == nil || st != r.stamp {
		r.drop()
		if v, err := vault.Open(r.path, bytes.Clone(r.pass)); err == nil {
			r.v, r.stamp = v, st
		}
	}
	if r.v == nil {
		return nil
	}
	return r.v.Secret(name)
}

func (r *sealedReader) drop() {
	if r.v != nil {
		r.v.Wipe()
		r.v = nil
	}
}

// waitSecret waits up to 20 s for the named secret to satisfy ok, and
// returns it; what names what was awaited.
func (r *sealedReader) waitSecret(name, what string, ok func([]byte) bool) []byte {
	r.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if got := r.secret(name); ok(got) {
			return got
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s was not sealed into the vault in 20 s", what)
		}
	}
}
