package sshpattern

import "testing"

// matchRef is OpenSSH's match_pattern written as its recursion, '*'
// taking nothing or one more byte, remembered so that it stays
// polynomial.
func matchRef(pat, s string) bool {
	seen := make([]int8, (len(pat)+1)*(len(s)+1)) // 0 unknown, 1 no, 2 yes
	var m func(p, i int) bool
	m = func(p, i int) bool {
		k := p*(len(s)+1) + i
		if seen[k] != 0 {
			return seen[k] == 2
		}
		var ok bool
		switch {
		case p == len(pat):
			ok = i == len(s)
		case pat[p] == '*':
			ok = m(p+1, i) || (i < len(s) && m(p, i+1))
		case i < len(s) && (pat[p] == '?' || pat[p] == s[i]):
			ok = m(p+1, i+1)
		}
		seen[k] = 1
		if ok {
			seen[k] = 2
		}
		return ok
	}
	return m(0, 0)
}

func FuzzMatch(f *testing.F) {
	for _, c := range [][2]string{
		{"*", ""}, {"", ""}, {"", "a"}, {"?", ""}, {"a*b", "ab"}, {"a*b", "axxbxb"}, {"a*b", "axxbxc"},
		{"*.example.com", "host.example.com"}, {"*.example.com", "example.com"}, {"192.168.?.*", "192.168.1.10"},
		{"**a**b*", "xaybz"}, {"*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}, {"/usr/lib/*", "/usr/lib/x/p11.so"},
		{"[ab]", "a"}, {"\\*", "*"}, {"*?", ""}, {"?*?", "ab"}, {"ünï*", "ünïcode"},
	} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, pat, s string) {
		if got, want := Match(pat, s), matchRef(pat, s); got != want {
			t.Fatalf("Match(%q, %q) = %v, OpenSSH's recursion says %v", pat, s, got, want)
		}
	})
}
