package sshagent

import (
	"strings"
	"testing"
	"time"
)

// A user pattern in a destination constraint (ssh-add -h user@host) means
// what it means to OpenSSH's agent, match_pattern: '*' and '?' are the
// only special characters. Read as a path.Match pattern, brackets made a
// class and a backslash an escape, so a key restricted to the account
// "dep[l]oy" also signed for "deploy", and "*" did not cover a name with a
// slash.
func TestUserPatternIsOpenSSHs(t *testing.T) {
	host := newHost(t).PublicKey()
	for _, c := range []struct {
		pat, user string
		ok        bool
	}{
		{"deploy", "deploy", true},
		{"dep*", "deploy", true},
		{"d?ploy", "deploy", true},
		{"dep[l]oy", "deploy", false},
		{"dep[l]oy", "dep[l]oy", true},
		{`a\*`, `a\b`, true},
		{`a\*`, "a*", false},
		{"[", "[", true},
		{"*", "a/b", true},
		{"deploy", "deploy2", false},
	} {
		cs := []DestConstraint{{To: Hop{User: c.pat, Hostname: "h", Keys: []HopKey{{Key: host}}}}}
		user := c.user
		if got := permits(cs, nil, host, &user); got != c.ok {
			t.Errorf("user pattern %q, user %q: permitted %v, want %v", c.pat, c.user, got, c.ok)
		}
	}
}

// The pattern is the adding client's and the user name the signing
// client's: matching must take time in proportion to their product, not
// grow exponentially with the stars.
func TestGlobMatchIsNotExponential(t *testing.T) {
	pat := strings.Repeat("*a", 20) + "*b"
	s := strings.Repeat("a", 64<<10)
	done := make(chan bool, 1)
	go func() { done <- globMatch(pat, s) }()
	select {
	case got := <-done:
		if got {
			t.Fatalf("%q matched a string with no b", pat)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("matching %d stars against %d bytes has not returned after 10s", strings.Count(pat, "*"), len(s))
	}
}

// The single-backtrack match gives the answers of OpenSSH's recursive
// match_pattern, here written as it is, on every pattern and string of
// up to six characters over a small alphabet.
func TestGlobMatchAsOpenSSHsRecursion(t *testing.T) {
	var recursive func(pat, s string) bool
	recursive = func(pat, s string) bool {
		for len(pat) > 0 {
			switch pat[0] {
			case '*':
				for i := 0; i <= len(s); i++ {
					if recursive(pat[1:], s[i:]) {
						return true
					}
				}
				return false
			case '?':
				if len(s) == 0 {
					return false
				}
			default:
				if len(s) == 0 || s[0] != pat[0] {
					return false
				}
			}
			pat, s = pat[1:], s[1:]
		}
		return len(s) == 0
	}
	// every string of up to n characters over alphabet
	all := func(alphabet string, n int) []string {
		out, last := []string{""}, []string{""}
		for range n {
			var next []string
			for _, prefix := range last {
				for _, c := range alphabet {
					next = append(next, prefix+string(c))
				}
			}
			out, last = append(out, next...), next
		}
		return out
	}
	pats, strs := all("ab*?", 6), all("ab", 6)
	for _, p := range pats {
		for _, s := range strs {
			if got, want := globMatch(p, s), recursive(p, s); got != want {
				t.Fatalf("globMatch(%q, %q) = %v, match_pattern says %v", p, s, got, want)
			}
		}
	}
}
