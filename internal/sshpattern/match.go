// Package sshpattern matches names against OpenSSH's patterns, as
// OpenSSH's match_pattern does: the user patterns of destination
// constraints (ssh-add -h), the provider allow-list (ssh-agent -P) and
// the host patterns of known_hosts @cert-authority lines. These are not
// path globs: '*' matches any run of characters, '/' included, '?' any
// one character, and every other byte only itself (no classes, no
// escapes), so a pattern means to postern what it means to OpenSSH.
package sshpattern

// Match reports whether s matches pat.
//
// A failed match returns to the last star only, which gives the answer
// OpenSSH's recursion gives in time proportional to the product of the
// two lengths: the pattern and the string may come from two different
// clients.
func Match(pat, s string) bool {
	p, i := 0, 0
	star, mark := -1, 0 // the last star seen, and where in s it resumes
	for i < len(s) {
		switch {
		case p < len(pat) && pat[p] == '*':
			star, mark = p, i
			p++
		case p < len(pat) && (pat[p] == '?' || pat[p] == s[i]):
			p++
			i++
		case star >= 0:
			mark++
			p, i = star+1, mark
		default:
			return false
		}
	}
	for p < len(pat) && pat[p] == '*' {
		p++
	}
	return p == len(pat)
}
