package approvals

import (
	"strings"
	"testing"

	"github.com/postern/postern/audit"
)

// A per-call card says which mark makes it ask on every call, as postern
// check says it: the rule of the configuration that matches (a key, by
// fingerprint or comment, or a host's name or class in the host
// inventory), or the setting; for a destination with no name, the host
// rule it could match.
func TestPerCallCardSaysWhichMarkAsks(t *testing.T) {
	prod, other := hostKey(t), hostKey(t)
	tests := []struct {
		name  string
		rules []Rule
		def   audit.Mode
		req   func(w *world) *Request
		want  []string
	}{
		{"production host", []Rule{{Host: "git*", Mode: audit.ModeNone}, {Class: "production", Mode: audit.ModePerCall}}, audit.ModeSession,
			func(w *world) *Request { return w.authTo(13, prod) },
			[]string{`rule 2: class "production" (approval = "per-call")`}},
		{"production key signing a commit", []Rule{{Key: "SHA256:key", Mode: audit.ModePerCall}}, audit.ModeSession,
			func(w *world) *Request { return w.sshsig(13) },
			[]string{`rule 1: key "SHA256:key" (approval = "per-call")`}},
		{"key by comment to a host", []Rule{{Key: "wo*", Host: "prod-*", Mode: audit.ModePerCall}}, audit.ModeSession,
			func(w *world) *Request { return w.authTo(13, prod) },
			[]string{`rule 1: host "prod-*", key "wo*" (approval = "per-call")`}},
		{"unknown destination", []Rule{{Class: "production", Mode: audit.ModePerCall}}, audit.ModeSession,
			func(w *world) *Request { return w.authTo(13, nil) },
			[]string{`the destination has no name in the host inventory: it could be any host, and rule 1 could be its: class "production" (approval = "per-call")`}},
		{"host not in the inventory", []Rule{{Class: "production", Mode: audit.ModePerCall}}, audit.ModeSession,
			func(w *world) *Request { return w.authTo(13, other) },
			[]string{`the destination has no name in the host inventory: it could be any host, and rule 1 could be its: class "production" (approval = "per-call")`}},
		{"default", nil, audit.ModePerCall,
			func(w *world) *Request { return w.authTo(13, prod) },
			[]string{`no rule matches: the default (approval = "per-call")`}},
		{"ssh-add -c", nil, audit.ModeSession,
			func(w *world) *Request { r := w.authTo(13, prod); r.Key.Confirm = true; return r },
			[]string{"the key was added with ssh-add -c: every use is confirmed"}},
		{"forwarded", nil, audit.ModeSession,
			func(w *world) *Request { r := w.authTo(13, prod); r.Forwarded = true; return r },
			[]string{`no rule matches: the default (approval = "session"); a forwarded connection never rides a session`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.nameHost("prod-db-1", "production", prod)
			p := *w.e.Policy()
			p.Mode, p.Rules = tc.def, tc.rules
			w.e.SetPolicy(&p)
			ch := w.decide(tc.req(w))
			c := w.card()
			if c.Mode != audit.ModePerCall {
				t.Fatalf("card of mode %s", c.Mode)
			}
			if strings.Join(c.PerCall, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("the card says it asks on every call because of %q, want %q", c.PerCall, tc.want)
			}
			if text := c.Text(); !strings.Contains(text, "Asked on every call because of: "+strings.Join(tc.want, "; ")+"\n") {
				t.Errorf("the card does not say which mark makes it ask:\n%s", text)
			}
			w.answer(c.ID, VerdictDeny, 30)
			got(t, ch)
		})
	}
}
