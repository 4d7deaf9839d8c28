package config

import (
	"fmt"
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

// The error lists a few unknown settings, each cut, and counts the
// others: a file of a long table name and many keys (any program of the
// user can write one) made an error, logged and kept for status at each
// reload, a hundred times the file's size.
func TestUnknownSettingsListedBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("[" + strings.Repeat("t", 1000) + "]\n")
	for i := range 10000 {
		fmt.Fprintf(&b, "k%d = 1\n", i)
	}
	_, err := Parse("c", []byte(b.String()))
	if err == nil || len(err.Error()) > 2000 || !strings.HasPrefix(err.Error(), "c:1: unknown setting tttt") || !strings.HasSuffix(err.Error(), "and 9999 more") {
		t.Fatalf("Parse = %.300v… (%d bytes of error)", err, len(fmt.Sprint(err)))
	}
}
