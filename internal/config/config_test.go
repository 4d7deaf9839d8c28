package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDefaultsWithoutFile(t *testing.T) {
	f, err := Load(filepath.Join(t.TempDir(), "none.toml"))
	if err != nil || f.Approval != "session" || f.CardTimeout.Duration != 60*time.Second {
		t.Fatalf("defaults: %+v %v", f, err)
	}
}

func TestParse(t *testing.T) {
	f, err := Parse("c", []byte("approval = \"per-call\"\ncard_timeout = \"5s\"\nknown_hosts = [\"/x\"]\n"))
	if err != nil || f.Approval != "per-call" || f.CardTimeout.Duration != 5*time.Second || f.KnownHosts[0] != "/x" {
		t.Fatalf("%+v %v", f, err)
	}
	bad := map[string]string{
		"approval = \"maybe\"":    "approval",
		"approval = 3":            "approval",
		"card_timeout = \"-1s\"":  "card_timeout",
		"card_timeout = \"soon\"": "card_timeout",
		"card_timeout = \"0s\"":   "card_timeout",
		"nonsense = true":         "unknown setting nonsense",
		"approval = \"none\"\n[x": "c:2",
	}
	for in, want := range bad {
		_, err := Parse("c", []byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error mentioning %q", in, err, want)
		}
	}
}

func TestParseRulesAndBastion(t *testing.T) {
	f, err := Parse("c", []byte(`
approval = "session"
agents = ["claude"]
[[rule]]
host = "prod-*"
approval = "per-call"
[[rule]]
key = "SHA256:abc"
exe = "*/evil"
approval = "deny"
[bastion]
enabled = true
hosts = ["prod-*"]
markers = ["prod-*"]
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Rules) != 2 || f.Rules[1].Exe != "*/evil" || !f.Bastion.Enabled || f.Bastion.Markers[0] != "prod-*" {
		t.Fatalf("%+v", f)
	}
}

func TestLoadUnreadable(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.toml")
	os.WriteFile(p, make([]byte, maxSize+1), 0o600)
	if _, err := Load(p); err == nil {
		t.Fatal("oversized file accepted")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("approval = \"session\"\ncard_timeout = \"60s\"\n"))
	f.Add([]byte("known_hosts = [\"~/.ssh/known_hosts\"]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		Parse("fuzz", b)
	})
}
