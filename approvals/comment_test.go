package approvals

import (
	"testing"

	"github.com/postern/postern/audit"
)

// A rule over key comments matches a comment that is a path's text (what
// ssh-add gives a key without a comment of its own) across its slashes,
// case aside as a host rule matches a name (a key "Prod-Deploy" under a
// per-call rule "prod-*" is asked about on every call), and otherwise as
// the glob says.
func TestKeyRuleMatchesCommentsAcrossSlashes(t *testing.T) {
	none := func() []program { return nil }
	for _, tt := range []struct {
		rule, comment string
		match         bool
	}{
		{"*prod*", "/home/me/.ssh/prod_key", true},
		{"*/prod_key", "/home/me/.ssh/prod_key", true},
		{"/home/?e/.ssh/prod_key", "/home/me/.ssh/prod_key", true},
		{"/home/me/.ssh/prod_ke[xyz]", "/home/me/.ssh/prod_key", true},
		{"*prod*", "/home/me/.ssh/dev_key", false},
		{"prod*", "/home/me/.ssh/prod_key", false},
		{"*\ue000*", "/\ue000", true},
		{"a\ue000b", "a/b", false},
		{"deploy-*", "deploy-prod", true},
		{"prod-*", "Prod-Deploy", true},
		{"*PROD*", "/home/me/.ssh/prod_key", true},
		{"[A-C]*", "bastion", true},
		{"prod-*", "Dev-Deploy", false},
	} {
		p := &Policy{Mode: audit.ModeSession, Rules: []Rule{{Key: tt.rule, Mode: audit.ModePerCall}}}
		want := audit.ModeSession
		if tt.match {
			want = audit.ModePerCall
		}
		if m := p.modeFor(&facts{key: Key{Comment: tt.comment}, programs: none}, false); m != want {
			t.Errorf("key = %q, a key with comment %q: %s, want %s", tt.rule, tt.comment, m, want)
		}
	}
}
