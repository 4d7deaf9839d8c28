package config

import (
	"strings"
	"testing"
)

// A setting is named as postern.toml(5) spells it. The decoder would
// also take a key that matches a setting's name in another case (or by
// Unicode case folding: the Kelvin sign for k, the long s for s), and a
// file holding both spellings would then decode to either value, at
// random: a file approved for one could put the other in force.
func TestParseRefusesKeysInAnotherCase(t *testing.T) {
	for _, in := range []string{
		"approval = \"deny\"\nApproval = \"none\"\n",
		"APPROVAL = \"none\"\n",
		"[[rule]]\nkey = \"x\"\napproval = \"deny\"\n[[RULE]]\nkey = \"y\"\napproval = \"none\"\n",
		"[[rule]]\nHost = \"prod-*\"\napproval = \"per-call\"\n",
		"\"\u212Anown_hosts\" = [\"/x\"]\n",
		"\"\u017Fession_scope\" = \"key\"\n",
		"[Run]\nread_write = [\"~/x\"]\n",
		"bastion.Enabled = true\n",
	} {
		if _, err := Parse("c", []byte(in)); err == nil || !strings.Contains(err.Error(), "c:") {
			t.Errorf("Parse(%q) = %v, want an error naming the file and line", in, err)
		}
	}
}
