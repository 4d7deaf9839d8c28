package sshagent

import "testing"

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
