// Package knownhosts answers the question an approval card needs: which
// names does the user's known_hosts give to this verified host key?
//
// golang.org/x/crypto/ssh/knownhosts answers the opposite question (is
// this key right for this name). Here the key is already verified through
// session-bind@openssh.com, and the names are looked up for it. Plain
// entries give their names directly. Hashed entries (HashKnownHosts yes,
// Debian's default) hide their names; a candidate name, such as the host
// the client's command line claims, is confirmed when it hashes to an
// entry holding the verified key. Wildcard patterns are not names and are
// skipped; @revoked entries mark a key as revoked; @cert-authority entries
// name a CA, whose host certificates carry their own principals.
package knownhosts

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/internal/smallfile"

	"github.com/postern/postern/internal/sshpattern"
)

type hashed struct {
	salt, hash []byte
}

type entry struct {
	names   []string
	hashes  []hashed
	revoked bool
	ca      bool
	pattern []string // @cert-authority: the host patterns the CA is trusted for
}

// DB is the union of some known_hosts files, reloaded when they change.
type DB struct {
	files []string

	mu      sync.Mutex
	stamp   []time.Time
	entries map[string][]entry // by key blob
}

// Open returns a DB over files; a missing file is simply empty. "~/" is
// expanded to the home directory.
func Open(files []string) *DB { return &DB{files: Expand(files)} }

// Expand expands a leading "~/" in each of files to the home directory.
func Expand(files []string) []string {
	home, _ := os.UserHomeDir()
	var out []string
	for _, f := range files {
		if rest, ok := strings.CutPrefix(f, "~/"); ok && home != "" {
			f = home + "/" + rest
		}
		out = append(out, f)
	}
	return out
}

// MaxFile bounds a known_hosts file read: far above a real one (a line
// is about 100 bytes).
const MaxFile = 64 << 20

func (db *DB) load() {
	stamp := make([]time.Time, len(db.files))
	for i, f := range db.files {
		if st, err := os.Stat(f); err == nil {
			stamp[i] = st.ModTime()
		}
	}
	if db.entries != nil && slices.Equal(stamp, db.stamp) {
		return
	}
	db.stamp = stamp
	db.entries = make(map[string][]entry)
	for _, f := range db.files {
		b, err := smallfile.Read(f, MaxFile)
		if err != nil {
			continue
		}
		db.parse(b)
	}
}

func (db *DB) parse(b []byte) {
	eachLine(b, func(l entryLine) {
		if l.hosts == nil {
			return // a public key line: not a known_hosts entry
		}
		var e entry
		switch l.marker {
		case "@revoked":
			e.revoked = true
		case "@cert-authority":
			e.ca = true
		case "":
		default:
			return
		}
		for _, h := range l.hosts {
			if salt, sum, ok := parseHashed(h); ok {
				e.hashes = append(e.hashes, hashed{salt, sum})
				continue
			}
			if e.ca {
				e.pattern = append(e.pattern, h)
				continue
			}
			if isName(h) {
				e.names = append(e.names, h)
			}
		}
		blob := string(l.key.Marshal())
		db.entries[blob] = append(db.entries[blob], e)
	})
}

// isName reports whether a host field entry is a name, not a pattern.
func isName(h string) bool { return h != "" && !strings.ContainsAny(h, "*?!|") }

// entryLine is one entry of a known_hosts file: its marker (@revoked,
// @cert-authority or ""), its host field split at commas (nil for a line
// without one: a public key line, as in a .pub file), and its key.
type entryLine struct {
	no     int
	marker string
	hosts  []string
	key    ssh.PublicKey
}

// maxLine bounds a line: far above a key line (an RSA key of 16384 bits
// with a host certificate is under 10 KiB).
const maxLine = 1 << 20

// eachLine calls fn for every line of b that holds a key; comments, blank
// and malformed lines are skipped. A line whose first field is a key type
// has no host field.
func eachLine(b []byte, fn func(entryLine)) { scanLines(b, fn, func(int) {}) }

// scanLines is eachLine, and calls bad with the number of each malformed
// line.
func scanLines(b []byte, fn func(entryLine), bad func(no int)) {
	// The file is in memory already (bounded by MaxFile): a line too long
	// for any key is passed over as malformed, and the lines after it are
	// read all the same.
	no := 0
	for len(b) > 0 {
		var raw []byte
		raw, b, _ = bytes.Cut(b, []byte("\n"))
		no++
		if len(raw) > maxLine {
			bad(no)
			continue
		}
		text := bytes.TrimSpace(raw)
		if len(text) == 0 || text[0] == '#' {
			continue
		}
		l := entryLine{no: no}
		if text[0] == '@' {
			marker, rest, _ := cutField(text)
			l.marker = string(marker)
			text = rest
		}
		if key := bareKey(text); key != nil && l.marker == "" {
			l.key = key
			fn(l)
			continue
		}
		hosts, rest, ok := cutField(text)
		if !ok {
			bad(no)
			continue
		}
		key, _, _, _, err := ssh.ParseAuthorizedKey(rest)
		if err != nil {
			bad(no)
			continue
		}
		l.hosts, l.key = strings.Split(string(hosts), ","), key
		fn(l)
	}
}

// cutField cuts text at its first run of spaces and tabs, as ssh
// splits a known_hosts line's fields; found is false when there is none.
func cutField(text []byte) (field, rest []byte, found bool) {
	i := bytes.IndexAny(text, " \t")
	if i < 0 {
		return text, nil, false
	}
	return text[:i], bytes.TrimLeft(text[i:], " \t"), true
}

// bareKey returns the key of a line that starts with one (a public key
// line: "TYPE BASE64 [COMMENT]"), or nil for a line with a host field.
func bareKey(text []byte) ssh.PublicKey {
	f := bytes.Fields(text)
	if len(f) < 2 {
		return nil
	}
	blob, err := base64.StdEncoding.DecodeString(string(f[1]))
	if err != nil {
		return nil
	}
	key, err := ssh.ParsePublicKey(blob)
	if err != nil || key.Type() != string(f[0]) {
		return nil
	}
	return key
}

// parseHashed splits "|1|salt|hash".
func parseHashed(h string) (salt, sum []byte, ok bool) {
	rest, ok := strings.CutPrefix(h, "|1|")
	if !ok {
		return nil, nil, false
	}
	s, hs, ok := strings.Cut(rest, "|")
	if !ok {
		return nil, nil, false
	}
	salt, err1 := base64.StdEncoding.DecodeString(s)
	sum, err2 := base64.StdEncoding.DecodeString(hs)
	if err1 != nil || err2 != nil {
		return nil, nil, false
	}
	return salt, sum, true
}

// matches reports whether name, in any case, hashes to h: ssh takes a
// host name in any case and hashes it in lower case.
func (h hashed) matches(name string) bool {
	m := hmac.New(sha1.New, h.salt)
	m.Write([]byte(strings.ToLower(name)))
	return hmac.Equal(m.Sum(nil), h.hash)
}

// Result is what known_hosts says about a key.
type Result struct {
	Names   []string // names the files give this key, plain or confirmed hashes
	Hashed  int      // hashed entries holding the key that no candidate matched
	Revoked bool     // an @revoked line names the key (or, for a certificate, its key or its CA)
}

// Lookup returns the names of key. candidates are names the caller has
// reason to try against hashed entries (they become names only if they
// hash to an entry holding key). For a host certificate, the names of
// trusted @cert-authority entries for its signer are checked against the
// certificate's principals.
func (db *DB) Lookup(key ssh.PublicKey, candidates []string) Result {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.load()
	var r Result
	add := func(n string) {
		if !slices.Contains(r.Names, n) {
			r.Names = append(r.Names, n)
		}
	}
	for _, e := range db.entries[string(key.Marshal())] {
		if e.revoked {
			r.Revoked = true
			continue
		}
		if e.ca {
			continue
		}
		for _, n := range e.names {
			add(n)
		}
		for _, h := range e.hashes {
			found := false
			for _, c := range candidates {
				if h.matches(c) {
					add(c)
					found = true
				}
			}
			if !found {
				r.Hashed++
			}
		}
	}
	cert, ok := key.(*ssh.Certificate)
	if !ok {
		return r
	}
	// As ssh does: a certificate, of whatever type, is refused when
	// @revoked names the key it certifies or its CA.
	for _, k := range []ssh.PublicKey{cert.Key, cert.SignatureKey} {
		if k == nil {
			continue
		}
		for _, e := range db.entries[string(k.Marshal())] {
			if e.revoked {
				r.Revoked = true
			}
		}
	}
	if cert.CertType == ssh.HostCert {
		for _, e := range db.entries[string(cert.SignatureKey.Marshal())] {
			if !e.ca || e.revoked || r.Revoked {
				continue
			}
			for _, p := range cert.ValidPrincipals {
				if matchPatterns(e.pattern, p) {
					add(p)
				}
			}
		}
	}
	return r
}

// Revokes reports whether the files hold a @revoked line: the only way a
// known_hosts file decides anything (it refuses a key).
func (db *DB) Revokes() bool {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.load()
	for _, entries := range db.entries {
		for _, e := range entries {
			if e.revoked {
				return true
			}
		}
	}
	return false
}

// matchPatterns applies a known_hosts pattern list as OpenSSH's
// match_hostname does: a name matches, in any case, when a pattern
// matches it and no negated ("!") pattern does.
func matchPatterns(patterns []string, name string) bool {
	ok := false
	name = strings.ToLower(name)
	for _, p := range patterns {
		neg := strings.HasPrefix(p, "!")
		if sshpattern.Match(strings.ToLower(strings.TrimPrefix(p, "!")), name) {
			if neg {
				return false
			}
			ok = true
		}
	}
	return ok
}
