package sshpattern

import (
	"strings"
	"testing"
	"time"
)

// Paths, as the provider allow-list (ssh-agent -P) gives them: '*'
// crosses '/'.
func TestMatchPaths(t *testing.T) {
	for _, c := range []struct {
		pat, s string
		ok     bool
	}{
		{"/usr/lib*/*", "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so", true},
		{"/usr/lib*/*", "/usr/lib64/p.so", true},
		{"/usr/lib*/*", "/tmp/p.so", false},
		{"/opt/?/p.so", "/opt/a/p.so", true},
		{"/opt/?/p.so", "/opt/ab/p.so", false},
	} {
		if got := Match(c.pat, c.s); got != c.ok {
			t.Errorf("%s ~ %s: %v", c.pat, c.s, got)
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
	go func() { done <- Match(pat, s) }()
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
			if got, want := Match(p, s), recursive(p, s); got != want {
				t.Fatalf("Match(%q, %q) = %v, match_pattern says %v", p, s, got, want)
			}
		}
	}
}
