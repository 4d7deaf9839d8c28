package config

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"path"
	"strings"
	"unicode"
)

// A rule's values are checked one by one, and an error names the line
// the value came from. A value that cannot mean what it says is an error,
// never a rule that silently matches nothing: a deny rule for the key
// "SHA256:garbage" would otherwise deny nothing.

// checkRule checks rule i (from 1).
func checkRule(i int, r Rule) error {
	bad := func(key, format string, args ...any) error {
		return &settingError{Table: "rule", N: i, Key: key, Msg: fmt.Sprintf("rule %d: "+format, append([]any{i}, args...)...)}
	}
	if r.Host == "" && r.Class == "" && r.Key == "" && r.Exe == "" {
		return bad("", "give at least one of host, class, key, exe")
	}
	if r.Approval == "" {
		return bad("", "approval is missing")
	}
	if err := checkMode(r.Approval); err != nil {
		return bad("approval", "%v", err)
	}
	if _, err := path.Match(r.Host, ""); err != nil {
		return bad("host", "host = %s: bad pattern", quoted(r.Host))
	}
	if strings.ContainsRune(r.Host, '!') {
		return bad("host", "host = %s: %s", quoted(r.Host), noNegation)
	}
	if c, ok := outside(r.Host, hostChars); !ok {
		why := ""
		if c > unicode.MaxASCII {
			// An internationalized name is in DNS, known_hosts and the
			// inventory as its punycode; a look-alike letter is in none.
			why = "; a name with letters beyond ASCII is written in its punycode form (xn--…), as DNS and known_hosts write it"
		}
		return bad("host", "host = %s: %q is in no host name (letters, digits and . - _ : [ ] @), so the rule would match no host%s", quoted(r.Host), c, why)
	}
	if _, err := path.Match(r.Class, ""); err != nil {
		return bad("class", "class = %s: bad pattern", quoted(r.Class))
	}
	if strings.ContainsRune(r.Class, '!') {
		return bad("class", "class = %s: %s", quoted(r.Class), noNegation)
	}
	if c, ok := outside(r.Class, classChars); !ok {
		return bad("class", "class = %s: %q is in no class (lower-case letters, digits, - and _), so the rule would match no host", quoted(r.Class), c)
	}
	if err := checkKey(r.Key); err != nil {
		return bad("key", "key = %s: %v", quoted(r.Key), err)
	}
	if err := checkExe(r.Exe); err != nil {
		return bad("exe", "exe = %s: %v", quoted(r.Exe), err)
	}
	return nil
}

// noNegation refuses a "!" in a host or class pattern, and in a marker
// pattern ([bastion] markers). No name or class has one, so outside
// brackets it matches nothing ("!dev-*", as in ssh_config, would match
// no host), and inside them the glob reads it as itself, not as "not"
// ("[!0-9]" is "!" or a digit).
const noNegation = `"!" negates nothing here: a pattern is a glob (path.Match), not an ssh_config pattern list; write [^…] to leave characters out of one position, and name the hosts meant rather than those not meant`

// The characters of the host inventory's names and classes
// (postern-hosts(1)), with those of a glob. A pattern with another
// character could match nothing the inventory holds.
const (
	globChars  = "*?[]\\^-"
	hostChars  = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:[]@" + globChars
	classChars = "abcdefghijklmnopqrstuvwxyz0123456789-_" + globChars
)

// outside returns the first rune of s not in chars, and false; or true
// when there is none.
func outside(s, chars string) (rune, bool) {
	for _, c := range s {
		if !strings.ContainsRune(chars, c) {
			return c, false
		}
	}
	return 0, true
}

// checkKey accepts a SHA256 fingerprint as ssh-keygen -l prints it, or a
// glob over key comments.
func checkKey(k string) error {
	switch rest, ok := strings.CutPrefix(k, "SHA256:"); {
	case ok:
		if b, err := base64.RawStdEncoding.DecodeString(rest); err != nil || len(b) != 32 {
			return fmt.Errorf("not a key fingerprint: SHA256: is followed by 43 characters of base64 (ssh-keygen -lf KEY prints it)")
		}
		return nil
	case hasFoldPrefix(k, "SHA256:"), hasFoldPrefix(k, "MD5:"):
		return fmt.Errorf("fingerprints are written SHA256:… (upper case), as ssh-keygen -l prints them")
	}
	if _, err := path.Match(k, ""); err != nil {
		return fmt.Errorf("bad pattern")
	}
	return nil
}

// checkExe accepts "sha256:" and 64 hex digits, or a glob over absolute
// executable paths. A name is refused: any program can take it, so a rule
// by name could only be borrowed.
func checkExe(e string) error {
	if hasFoldPrefix(e, "sha256:") {
		h, ok := strings.CutPrefix(e, "sha256:")
		if b, err := hex.DecodeString(h); !ok || err != nil || len(b) != 32 {
			return fmt.Errorf("not an executable hash: write sha256: and the 64 hex digits sha256sum prints")
		}
		return nil
	}
	if e != "" && !strings.HasPrefix(e, "/") {
		return fmt.Errorf("give the executable's absolute path (such as %s) or \"sha256:HEX\"; a name matches nothing, since any program can take it", quoted("/usr/bin/"+path.Base(e)))
	}
	if _, err := path.Match(e, ""); err != nil {
		return fmt.Errorf("bad pattern")
	}
	return nil
}

func hasFoldPrefix(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
