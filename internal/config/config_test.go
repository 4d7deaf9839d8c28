package config

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
		// A name can be taken by any program: only a path or a hash.
		"[[rule]]\nexe = \"git\"\napproval = \"none\"":        `exe = "git": give the executable's absolute path (such as "/usr/bin/git")`,
		"[[rule]]\nexe = \"*/git\"\napproval = \"none\"":      "absolute path",
		"[[rule]]\nexe = \"sha256:abc\"\napproval = \"none\"": "64 hex digits",
		"upstream_changes = \"pass\"":                         "upstream_changes",
		"upstream = 3":                                        "upstream",
		"[run]\nread_write = [\"rel\"]":                       "[run] read_write = \"rel\"",
		"[run]\nhide = [\"~x\"]":                              "[run] hide = \"~x\"",
	}
	for in, want := range bad {
		_, err := Parse("c", []byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error mentioning %q", in, err, want)
		}
	}
}

func TestParseUpstream(t *testing.T) {
	f, err := Parse("c", []byte("upstream = \"~/.1password/agent.sock\"\nupstream_changes = \"forward\"\n"))
	if err != nil || f.Upstream != "~/.1password/agent.sock" || f.UpstreamChanges != "forward" {
		t.Fatalf("%+v %v", f, err)
	}
	if f, _ := Parse("c", []byte("approval = \"none\"\n")); f.Upstream != "" || f.UpstreamChanges != "refuse" {
		t.Fatalf("upstream defaults: %+v", f)
	}
}

func TestParseRun(t *testing.T) {
	if d := Defaults(); len(d.Run.ReadWrite) != 0 {
		t.Fatalf("default [run]: %+v", d.Run)
	}
	f, err := Parse("c", []byte("[run]\nread_write = [\"~/go/pkg/mod\", \"/srv/x\"]\nread_only = [\"/tmp/ro\"]\nhide = [\"~/.gnupg\"]\n"))
	if err != nil || len(f.Run.ReadWrite) != 2 || f.Run.ReadOnly[0] != "/tmp/ro" || f.Run.Hide[0] != "~/.gnupg" {
		t.Fatalf("%+v %v", f.Run, err)
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
key = "SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8"
exe = "/opt/*/evil"
approval = "deny"
[[rule]]
exe = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
approval = "deny"
[bastion]
enabled = true
hosts = ["prod-*"]
markers = ["prod-*"]
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Rules) != 3 || f.Rules[1].Exe != "/opt/*/evil" || !f.Bastion.Enabled || f.Bastion.Markers[0] != "prod-*" {
		t.Fatalf("%+v", f)
	}
}

func TestLoadUnreadable(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.toml")
	os.WriteFile(p, make([]byte, MaxSize+1), 0o600)
	if _, err := Load(p); err == nil {
		t.Fatal("oversized file accepted")
	}
}

// FuzzParse reads a configuration file, which any program of the
// person's can write and postern check shows the errors of: an error is
// one line with no byte a terminal would act on, and a line it names is
// one of the file's.
func FuzzParse(f *testing.F) {
	f.Add([]byte("approval = \"session\"\ncard_timeout = \"60s\"\n"))
	f.Add([]byte("known_hosts = [\"~/.ssh/known_hosts\"]\n"))
	f.Add([]byte("[[rule]]\nhost = \"a\"\napproval = \"none\"\n[[ rule ]] # x\nkey = \"SHA256:zz\"\napproval = \"deny\"\n"))
	f.Add([]byte("x = \"\"\"\n[[rule]]\n\"\"\"\n[[rule]]\nexe = \"sha256:0\"\napproval = \"deny\"\n"))
	f.Add([]byte("approval = \"\x1b[2J\"\n"))
	f.Add([]byte("\x1b[2J = 1\n"))
	f.Add([]byte("[[rule]]\nhost = \"a\\u001b\\u009b\"\napproval = \"none\u202e\"\n"))
	f.Add([]byte("card_timeout = \"-1s\"\n"))
	f.Add([]byte("[bastion]\nenabled = true\nhosts = [\"\\n\"]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := Parse("fuzz", b)
		if err == nil {
			return
		}
		msg := err.Error()
		if strings.ContainsFunc(msg, func(r rune) bool { return r < ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0) }) {
			t.Fatalf("%q refused as %q", b, msg)
		}
		if rest, ok := strings.CutPrefix(msg, "fuzz:"); ok {
			if n, err := strconv.Atoi(rest[:max(strings.IndexByte(rest, ':'), 0)]); err == nil && (n < 1 || n > bytes.Count(b, []byte("\n"))+1) {
				t.Fatalf("%q refused at line %d: %s", b, n, msg)
			}
		}
	})
}

// A rule value that cannot mean what it says is an error naming its line:
// such a deny rule would otherwise match nothing and deny nothing.
func TestRuleValuesWithTheirLine(t *testing.T) {
	const good = "SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8"
	for _, c := range []struct{ value, want string }{
		{`key = "SHA256:garbage"`, `c:6: rule 2: key = "SHA256:garbage": not a key fingerprint`},
		{`key = "SHA256:` + good[7:] + `="`, "c:6: rule 2: key"},
		{`key = "sha256:` + good[7:] + `"`, "c:6: rule 2: key = \"sha256:nThb"},
		{`key = "MD5:16:27:ac:a5:76:28:2d:36:63:1b:56:4d:eb:df:a6:48"`, "c:6: rule 2: key"},
		{`key = "[work"`, "c:6: rule 2: key = \"[work\": bad pattern"},
		{`exe = "sha256:00"`, "c:6: rule 2: exe = \"sha256:00\": not an executable hash"},
		{`exe = "sha256:` + strings.Repeat("g", 64) + `"`, "c:6: rule 2: exe"},
		{`exe = "SHA256:` + strings.Repeat("a", 64) + `"`, "c:6: rule 2: exe"},
		{`host = "prod-[db"`, "c:6: rule 2: host = \"prod-[db\": bad pattern"},
		{`approval = "sometimes"`, "c:6: rule 2: approval = \"sometimes\""},
	} {
		src := "approval = \"session\"\n[[rule]]\nhost = \"a\"\napproval = \"deny\"\n[[rule]]\n" + c.value + "\n"
		if !strings.HasPrefix(c.value, "approval") {
			src += "approval = \"deny\"\n"
		} else {
			src += "host = \"b\"\n"
		}
		src += "[[rule]]\nhost = \"c\"\napproval = \"none\"\n"
		_, err := Parse("c", []byte(src))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.value, err, c.want)
		}
	}
	// A rule without a value names its table's line; top-level and
	// [bastion] settings name theirs.
	for src, want := range map[string]string{
		"[[rule]]\nhost = \"a\"\napproval = \"none\"\n[[rule]]\nhost = \"b\"\n":  "c:4: rule 2: approval is missing",
		"# comment\napproval = \"sometimes\"\n":                                  "c:2: approval",
		"[bastion]\nenabled = true\nsocket = \"rel.sock\"\n":                     "c:3: [bastion] socket",
		"[run]\nhide = [\"~/x\"]\nread_write = [\"rel\"]\n":                      "c:3: [run] read_write = \"rel\"",
		"card_timeout = \"1s\"\nrule = [{host = \"a\", approval = \"maybe\"}]\n": "c:2: rule 1: approval",
	} {
		if _, err := Parse("c", []byte(src)); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: %v, want %q", src, err, want)
		}
	}
}

// A host or class pattern that no name or class of the host inventory
// can match is refused: a per-call rule for class "Production" would ask
// about nothing, since classes are lower case (postern-hosts(1)), and a
// host pattern with a character no host name has (a space, a non-ASCII
// letter or an invisible one) matches no host either.
func TestParseRuleUnmatchable(t *testing.T) {
	for in, want := range map[string]string{
		"[[rule]]\nclass = \"Production\"\napproval = \"per-call\"":  `class = "Production"`,
		"[[rule]]\nclass = \"prod uction\"\napproval = \"per-call\"": `class = "prod uction"`,
		"[[rule]]\nhost = \"prod\u200b-*\"\napproval = \"per-call\"": `host = "prod\u200b-*"`,
		"[[rule]]\nhost = \"db1.example.com \"\napproval = \"deny\"": `host = "db1.example.com "`,
		"[[rule]]\nhost = \"prοd-*\"\napproval = \"deny\"":           `host = "prοd-*"`, // a Greek omicron
		// A name beyond ASCII is pointed to its punycode form.
		"[[rule]]\nhost = \"bücher.example\"\napproval = \"deny\"": `punycode form (xn--…)`,
	} {
		_, err := Parse("c", []byte(in))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "c:2:") {
			t.Errorf("Parse(%q) = %v, want an error at c:2 about %q", in, err, want)
		}
	}
	for _, in := range []string{
		"[[rule]]\nclass = \"prod*\"\napproval = \"per-call\"",
		"[[rule]]\nclass = \"[a-z]?_x-1\"\napproval = \"per-call\"",
		"[[rule]]\nhost = \"DB-[0-9]*.example.com\"\napproval = \"per-call\"",
		"[[rule]]\nhost = \"[::1]:2222\"\napproval = \"per-call\"",
		"[[rule]]\nhost = \"git@[^x]\\\\*\"\napproval = \"per-call\"",
	} {
		if _, err := Parse("c", []byte(in)); err != nil {
			t.Errorf("Parse(%q) = %v", in, err)
		}
	}
}

// A file nested deep (inline tables in inline tables, keys of many
// dotted parts) is refused at once: the TOML decoder takes time and
// memory that grow with the square of the depth, and a file of the size
// allowed would hold a reload for hours.
func TestParseDeepNestingRefusedQuickly(t *testing.T) {
	const n = 100000
	for name, in := range map[string]string{
		"inline tables": "x = " + strings.Repeat("{a=", n) + "1" + strings.Repeat("}", n) + "\n",
		"dotted key":    "approval = \"none\"\n" + strings.Repeat("a.", n) + "a = 1\n",
		"table header":  "[" + strings.Repeat("a.", n) + "a]\n",
		"arrays":        "agents = " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n",
		// A multi-line string may end in one or two quotes of its own
		// before its closing three: the rest of the file is not in it.
		"after a string ending in a quote":      "x = \"\"\"a\"\"\"\"\ny = " + strings.Repeat("{a=", n) + "1" + strings.Repeat("}", n) + "\n",
		"after a string ending in two quotes":   "x = '''a'''''\ny = " + strings.Repeat("{a=", n) + "1" + strings.Repeat("}", n) + "\n",
		"dotted key after a string with quotes": "x = \"\"\"a\"\"\"\"\n" + strings.Repeat("a.", n) + "a = 1\n",
	} {
		done := make(chan error, 1)
		go func() { _, err := Parse("c", []byte(in)); done <- err }()
		select {
		case err := <-done:
			if err == nil || len(err.Error()) > 1000 {
				t.Errorf("%s: Parse = %.200v (%d bytes of error)", name, err, len(fmt.Sprint(err)))
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s: Parse of a %d KB file did not return within 5s", name, len(in)>>10)
		}
	}
	// What a person writes is no deeper than this.
	ok := "[[rule]]\nhost = \"a.b.c\"\napproval = \"none\"\n[run]\nread_write = [\"~/x\"]\n" +
		"[bastion]\nhosts = [\"a.b\", 'c.d', \"\"\"e.f\"\"\"] # a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z.a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z.{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{\n"
	if _, err := Parse("c", []byte(ok)); err != nil {
		t.Fatalf("Parse(%q) = %v", ok, err)
	}
	quoted := "[bastion]\nhosts = [\"\"\"a\"\"\"\"\", '''b'''', \"{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{\"]\n"
	if f, err := Parse("c", []byte(quoted)); err != nil || !slices.Equal(f.Bastion.Hosts, []string{`a""`, "b'", strings.Repeat("{", 33)}) {
		t.Fatalf("Parse(%q) = %q, %v", quoted, f.Bastion.Hosts, err)
	}
}

// A "!" in a host or class pattern negates nothing: a rule's pattern is a
// glob, not an ssh_config pattern list, and no host name or class has a
// "!". So "!dev-*" matched no host, and a per-call rule written to ask
// about every host but the dev ones asked about none; in brackets the
// glob takes "!" as itself, so "web[!0-9]" matched only what a person
// meant to leave out. Both are refused, at their line.
func TestParseRuleNegationRefused(t *testing.T) {
	for in, want := range map[string]string{
		"[[rule]]\nhost = \"!dev-*\"\napproval = \"per-call\"":     `host = "!dev-*"`,
		"[[rule]]\nhost = \"web[!0-9]*\"\napproval = \"per-call\"": `host = "web[!0-9]*"`,
		"[[rule]]\nclass = \"!staging\"\napproval = \"per-call\"":  `class = "!staging"`,
	} {
		_, err := Parse("c", []byte(in))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "c:2:") || !strings.Contains(err.Error(), "[^") {
			t.Errorf("Parse(%q) = %v, want an error at c:2 about %q that says how to exclude ([^…])", in, err, want)
		}
	}
}

// A known_hosts file named by a relative path would be read from the
// directory the gateway was started in, which differs from one start to
// the next (and from the directory of postern hosts import): its @revoked
// lines would refuse keys or not by where the gateway started. It is an
// error at its line, as a [run] path is.
func TestKnownHostsPathsAreAbsolute(t *testing.T) {
	for in, want := range map[string]string{
		"known_hosts = [\"~/.ssh/known_hosts\", \"work_known_hosts\"]\n": `c:1: known_hosts = "work_known_hosts": give an absolute path or one starting with ~/`,
		"[bastion]\nenabled = true\nknown_hosts = [\"./kh\"]\n":          `c:3: [bastion] known_hosts = "./kh": give an absolute path or one starting with ~/`,
	} {
		if _, err := Parse("c", []byte(in)); err == nil || err.Error() != want {
			t.Errorf("Parse(%q) = %v, want %s", in, err, want)
		}
	}
}

// An approved copy is decoded without its values checked again, but what
// does not decode, or names a setting this postern does not know, is
// still an error.
func TestParseApproved(t *testing.T) {
	f, err := ParseApproved("a", []byte("known_hosts = [\"kh\"]\n[[rule]]\nhost = \"!dev-*\"\napproval = \"per-call\"\n"))
	if err != nil || f.KnownHosts[0] != "kh" || f.Rules[0].Host != "!dev-*" {
		t.Fatalf("ParseApproved = %+v, %v", f, err)
	}
	for _, in := range []string{"approval = \n", "approvals = \"none\"\n", "Approval = \"none\"\n"} {
		if _, err := ParseApproved("a", []byte(in)); err == nil {
			t.Errorf("ParseApproved(%q) took it", in)
		}
	}
}

// A bad value is quoted in the error cut, however long the file made it
// (a program of the user can write the file; the error is logged, kept
// in status and printed): the explanation after the value is kept.
func TestErrorsCutTheValuesTheyQuote(t *testing.T) {
	long := strings.Repeat("x", 200_000)
	for _, c := range []struct{ name, file, want string }{
		{"rule value", "[[rule]]\nhost = \"" + long + "[\"\napproval = \"deny\"\n", "bad pattern"},
		{"setting value", "approval = \"" + long + "\"\n", "want none, session, per-call or deny"},
		{"duration", "card_timeout = \"" + long + "\"\n", "not a duration"},
		{"parse error", "approval = " + long + "\n", ""},
		{"parse error in a key", "[" + long + "\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("postern.toml", []byte(c.file))
			if err == nil {
				t.Fatal("parsed")
			}
			msg := err.Error()
			if len(msg) > 2000 {
				t.Errorf("the error is %d bytes long: %.120s…", len(msg), msg)
			}
			if !strings.Contains(msg, c.want) {
				t.Errorf("the error %.300q lacks %q", msg, c.want)
			}
		})
	}
}

// A marker pattern is a glob too: "!" negates nothing there either. A
// list written as ssh_config's Host line ("prod-*", "!prod-legacy") to
// leave one host's commands unwrapped wrapped them all the same, on a
// host whose shell the wrapper may not suit.
func TestParseMarkerNegationRefused(t *testing.T) {
	in := "[bastion]\nenabled = true\nmarkers = [\"prod-*\", \"!prod-legacy\"]\n"
	_, err := Parse("c", []byte(in))
	if err == nil || !strings.Contains(err.Error(), `"!prod-legacy"`) || !strings.Contains(err.Error(), "c:3:") || !strings.Contains(err.Error(), "[^") {
		t.Errorf("Parse(%q) = %v, want an error at c:3 about \"!prod-legacy\" that says how to exclude ([^…])", in, err)
	}
}

// An agents entry is a program's name: one holding a path, or empty,
// would never match a process (a process is matched by the base name of
// its executable, its kernel name or its first arguments), so the person
// who wrote it would see no card preselect the agent and not know why.
func TestAgentsAreProgramNames(t *testing.T) {
	for in, want := range map[string]string{
		"agents = [\"claude\", \"/usr/local/bin/codex\"]\n": `c:1: agents = "/usr/local/bin/codex": name the program ("codex"), not its path`,
		"agents = [\"\"]\n": `c:1: agents = "": name a program`,
	} {
		if _, err := Parse("c", []byte(in)); err == nil || err.Error() != want {
			t.Errorf("Parse(%q) = %v, want %s", in, err, want)
		}
	}
	if f, err := Parse("c", []byte("agents = [\"claude-code-agent-long\", \"codex\"]\n")); err != nil || len(f.Agents) != 2 {
		t.Errorf("Parse of names = %+v, %v", f.Agents, err)
	}
}
