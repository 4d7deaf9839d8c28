package knownhosts

import (
	"slices"
	"strings"

	"golang.org/x/crypto/ssh"
)

// What "postern hosts add" and "postern hosts import" read: known_hosts
// files, ssh-keyscan's output (the same format) and public key files, as
// a source of keys for names a person gives. The person is shown what was
// found, and where, to compare with the host's own fingerprints.

// Found is a key a text gives a name.
type Found struct {
	Name   string
	Key    ssh.PublicKey
	Line   int
	Hashed bool // through a hashed entry (HashKnownHosts)
	Bare   bool // a public key line, with no host field
}

// KeysFor returns the keys text gives name, in any case as ssh takes it:
// entries that name it plainly, hashed entries whose hash is name's and,
// with pubKeys (text is a file the person named for name, such as a .pub
// file, which names no host), public key lines, taken for name. In a known_hosts file a line with no
// host field names no host (ssh passes it over), so without pubKeys it
// gives none. @revoked and @cert-authority lines, and patterns, give
// none.
func KeysFor(text []byte, name string, pubKeys bool) []Found {
	var out []Found
	eachLine(text, func(l entryLine) {
		if l.marker != "" {
			return
		}
		if l.hosts == nil {
			if pubKeys {
				out = add(out, Found{Name: name, Key: l.key, Line: l.no, Bare: true})
			}
			return
		}
		for _, h := range l.hosts {
			if strings.EqualFold(h, name) && isName(h) {
				out = add(out, Found{Name: name, Key: l.key, Line: l.no})
				return
			}
			if salt, sum, ok := parseHashed(h); ok && (hashed{salt, sum}).matches(name) {
				out = add(out, Found{Name: name, Key: l.key, Line: l.no, Hashed: true})
				return
			}
		}
	})
	return out
}

// Named returns every name text gives plainly, with its keys, in the
// order they come. Hashed entries hide their names: KeysFor finds them by
// a name given.
func Named(text []byte) []Found {
	var out []Found
	eachLine(text, func(l entryLine) {
		if l.marker != "" || l.hosts == nil {
			return
		}
		for _, h := range l.hosts {
			if isName(h) {
				out = add(out, Found{Name: h, Key: l.key, Line: l.no})
			}
		}
	})
	return out
}

// Revoked returns the keys of text's @revoked lines, whatever hosts
// they name: ssh refuses such a key for every host.
func Revoked(text []byte) []Found {
	var out []Found
	eachLine(text, func(l entryLine) {
		if l.marker == "@revoked" && l.hosts != nil {
			out = append(out, Found{Key: l.key, Line: l.no})
		}
	})
	return out
}

// Malformed returns the numbers of the lines of text that are neither
// blank, nor comments, nor known_hosts entries, nor public keys: what
// KeysFor and Named pass over.
func Malformed(text []byte) []int {
	var out []int
	scanLines(text, func(entryLine) {}, func(no int) { out = append(out, no) })
	return out
}

// add appends f unless the same name already has the same key.
func add(list []Found, f Found) []Found {
	blob := string(f.Key.Marshal())
	if slices.ContainsFunc(list, func(o Found) bool { return o.Name == f.Name && string(o.Key.Marshal()) == blob }) {
		return list
	}
	return append(list, f)
}
