package config

import (
	"strings"
	"testing"
)

// An unknown setting, a misspelt one most often, names the line it is
// on, wherever it is: at the top level, in a table, in the n-th [[rule]],
// in a rule written inline, or as a table of its own.
func TestUnknownSettingWithItsLine(t *testing.T) {
	for src, want := range map[string]string{
		"approval = \"none\"\n\naproval = \"deny\"\n":                                                         "c:3: unknown setting aproval",
		"[bastion]\nenabled = true\nenbled = true\n":                                                          "c:3: unknown setting bastion.enbled",
		"[[rule]]\nhost = \"a\"\napproval = \"deny\"\n[[rule]]\nhost = \"b\"\naproval = \"deny\"\n":           "c:6: unknown setting rule.aproval",
		"[[rule]]\nhost = \"a\"\napproval = \"deny\"\n[[rule]]\nhost = \"b\"\napproval = \"deny\"\nx.y = 1\n": "c:7: unknown setting rule.x.y",
		"card_timeout = \"1s\"\nrule = [{host = \"a\", aproval = \"deny\"}]\n":                                "c:2: unknown setting rule.aproval",
		"[bastion]\nenabled = true\n\n[bastion.extra]\nq = 1\n":                                               "c:4: unknown setting bastion.extra",
	} {
		_, err := Parse("c", []byte(src))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: %v, want %q", src, err, want)
		}
	}
}
