package knownhosts

import (
	"slices"
	"strings"

	"golang.org/x/crypto/ssh"
)

// KeysNamed returns the keys the files give name, in any case as ssh
// takes it: plain entries, and hashed ones whose hash is name's. A key an
// @revoked line names is left out (ssh refuses it). This is what a login
// to name verifies when ssh reads these files: a dry run of the policy
// ("postern check") learns from it which host key such a login would be
// named by; it names nothing for a rule.
func (db *DB) KeysNamed(name string) []ssh.PublicKey {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.load()
	var blobs []string
	for blob, es := range db.entries {
		named, revoked := false, false
		for _, e := range es {
			switch {
			case e.revoked:
				revoked = true
			case e.ca:
			case slices.ContainsFunc(e.names, func(n string) bool { return strings.EqualFold(n, name) }),
				slices.ContainsFunc(e.hashes, func(h hashed) bool { return h.matches(name) }):
				named = true
			}
		}
		if named && !revoked {
			blobs = append(blobs, blob)
		}
	}
	slices.Sort(blobs)
	var out []ssh.PublicKey
	for _, b := range blobs {
		if k, err := ssh.ParsePublicKey([]byte(b)); err == nil {
			out = append(out, k)
		}
	}
	return out
}
