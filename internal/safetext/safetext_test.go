package safetext

import (
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestField(t *testing.T) {
	for _, tt := range []struct {
		in    string
		limit int
		want  string
	}{
		{"ssh", Name, "ssh"},
		{"/usr/bin/ssh", Path, "/usr/bin/ssh"},
		{"", Name, ""},
		{"prod\nAllow staging-web?", Line, `prod\nAllow staging-web?`},
		{"\x1b[2K\x1b[1Astaging-web", Line, `\x1b[2K\x1b[1Astaging-web`},
		{"a\rb\tc\x00d\x7f", Line, `a\rb\tc\x00d\x7f`},
		{`back\slash`, Line, `back\\slash`},
		{"evil\u202egnp.exe", Line, `evil\u202egnp.exe`},     // right-to-left override
		{"a\u2066b\u2069c", Line, `a\u2066b\u2069c`},         // isolates
		{"zero\u200bwidth", Line, `zero\u200bwidth`},         // zero-width space
		{"line\u2028sep", Line, `line\u2028sep`},             // line separator
		{"nb\u00a0sp", Line, `nb\u00a0sp`},                   // no-break space
		{"c1\u0085\u009b", Line, `c1\u0085\u009b`},           // C1 controls, NEL and CSI
		{"tag\U000e0041", Line, `tag\U000e0041`},             // a tag character
		{"\u0338x", Line, `\u0338x`},                         // a leading combining mark
		{"e\u0301", Line, "e\u0301"},                         // a combining mark after its base
		{"e\u0323\u0302\u0301", Line, "e\u0323\u0302\u0301"}, // three on one character
		// More would stack over the lines above and below in a dialog.
		{"s" + strings.Repeat("\u0364", 5) + "sh", Line, "s" + strings.Repeat("\u0364", 3) + `\u0364\u0364sh`},
		{"\x01\u0338", Line, `\x01\u0338`},           // on an escape it would change the escape
		{"ünïcødé ✓ 日本", Line, "ünïcødé ✓ 日本"},       // printable text stays
		{"bad\xff\xfeutf8", Line, `bad\xff\xfeutf8`}, // not UTF-8
		{"dots… here", Line, `dots\u2026 here`},      // the marker's character
		{"abcdefghij", 4, "abcd…(+6 bytes)"},         // cut
		{"\x1b\x1b\x1b", 6, `\x1b…(+2 bytes)`},       // never inside an escape
		{"日本語です", 2, "日本…(+9 bytes)"},                // at a character boundary
		{strings.Repeat("x", 70), Name, strings.Repeat("x", 64) + "…(+6 bytes)"},
	} {
		if got := Field(tt.in, tt.limit); got != tt.want {
			t.Errorf("Field(%q, %d) = %q, want %q", tt.in, tt.limit, got, tt.want)
		}
	}
	if got, want := Quote(`git" for prod-db?`+"\n", Name), `"git\" for prod-db?\n"`; got != want {
		t.Errorf("Quote = %s, want %s", got, want)
	}
	// A double quote of another shape would end the quoted value too:
	// "claude＂ ＂bash" would read as two names.
	for in, want := range map[string]string{
		"claude\uff02 \uff02bash":         `"claude\uff02 \uff02bash"`,
		"ssh\u201d (1) \u2190 \u201cbash": `"ssh\u201d (1) ← \u201cbash"`,
		"a\u02ba b\u2033 c\u00bb":         `"a\u02ba b\u2033 c\u00bb"`,
		"it's":                            `"it's"`,
	} {
		if got := Quote(in, Name); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}

// unescape inverts an uncut rendering; the fuzz target uses it to prove
// that a rendering means exactly one input.
func unescape(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == '…' {
				return "", false
			}
			b.WriteString(s[i : i+size])
			i += size
			continue
		}
		if i+1 >= len(s) {
			return "", false
		}
		switch s[i+1] {
		case '\\':
			b.WriteByte('\\')
			i += 2
		case 'n':
			b.WriteByte('\n')
			i += 2
		case 'r':
			b.WriteByte('\r')
			i += 2
		case 't':
			b.WriteByte('\t')
			i += 2
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[i+1]]
			if i+2+n > len(s) {
				return "", false
			}
			v, err := strconv.ParseUint(s[i+2:i+2+n], 16, 32)
			if err != nil {
				return "", false
			}
			if s[i+1] == 'x' {
				b.WriteByte(byte(v))
			} else {
				b.WriteRune(rune(v))
			}
			i += 2 + n
		default:
			return "", false
		}
	}
	return b.String(), true
}

// FuzzField checks what a person is promised for any input: one line of
// printable characters, no bidirectional or other format characters, the
// cut marker only at the end of a cut field, a bounded length, and (uncut)
// a rendering that gives back exactly the input.
func FuzzField(f *testing.F) {
	for _, s := range []string{
		"ssh", "prod\nAllow staging-web?", "\x1b]0;title\x07\x1b[2J", "evil\u202egnp.exe", "\u0338",
		"…(+3 bytes)", `\x1b`, "bad\xff", "日本語", "\u00a0\u2028\u2029\ufeff", "\U0001f600 emoji",
	} {
		f.Add(s, 0)
		f.Add(s, 5)
	}
	f.Fuzz(func(t *testing.T, s string, limit int) {
		limit %= 300
		got := Field(s, limit)
		if !utf8.ValidString(got) {
			t.Fatalf("Field(%q) = %q: not UTF-8", s, got)
		}
		body := got
		if i := strings.Index(got, Marker); i >= 0 {
			body = got[:i]
			rest := strings.TrimPrefix(got[i:], Marker)
			if !strings.HasPrefix(rest, "(+") || !strings.HasSuffix(rest, " bytes)") || limit <= 0 {
				t.Fatalf("Field(%q, %d) = %q: marker in the middle", s, limit, got)
			}
		}
		marks := 0
		for i, r := range body {
			if r == ' ' {
				continue
			}
			if !unicode.IsPrint(r) || unicode.Is(unicode.Cf, r) || Invisible(r) || r == '…' {
				t.Fatalf("Field(%q) = %q: %U shown as it is", s, got, r)
			}
			if i == 0 && unicode.Is(unicode.M, r) {
				t.Fatalf("Field(%q) = %q: starts with a combining mark", s, got)
			}
			if unicode.Is(unicode.M, r) {
				if marks++; marks > maxMarks {
					t.Fatalf("Field(%q) = %q: more than %d combining marks on one character", s, got, maxMarks)
				}
			} else {
				marks = 0
			}
		}
		if limit > 0 && utf8.RuneCountInString(body) > limit {
			t.Fatalf("Field(%q, %d) = %q: longer than the limit", s, limit, got)
		}
		if q := Quote(s, limit); !strings.HasPrefix(q, `"`) || !strings.HasSuffix(q, `"`) || strings.Contains(strings.ReplaceAll(strings.ReplaceAll(q[1:len(q)-1], `\\`, ""), `\"`, ""), `"`) {
			t.Fatalf("Quote(%q) = %s: a quote inside is not escaped", s, q)
		}
		if body == got {
			back, ok := unescape(got)
			if !ok || back != s {
				t.Fatalf("Field(%q) = %q does not give back the input (%q, %v)", s, got, back, ok)
			}
		}
	})
}

func TestWhole(t *testing.T) {
	for _, c := range []struct {
		s     string
		limit int
		want  bool
	}{
		{"ls", 2, true},
		{"ls -l", 2, false},
		{"a\x01", 5, true},  // a\x01: five runes once escaped
		{"a\x01", 4, false}, // cut
		{strings.Repeat("x", 10) + Marker + "(+14 bytes)", 10, false},
		{"anything", 0, true},
	} {
		if got := Whole(c.s, c.limit); got != c.want {
			t.Errorf("Whole(%q, %d) = %v, want %v (Field: %q)", c.s, c.limit, got, c.want, Field(c.s, c.limit))
		}
	}
}

func TestCut(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"short \x1b", 10, "short \x1b"},
		{"abcdef", 4, "abcd…(+2 bytes)"},
		{"ab\u00e9\u00e9", 3, "ab…(+4 bytes)"}, // never inside a character
		{"\u00e9\u00e9", 2, "\u00e9…(+2 bytes)"},
	} {
		if got := Cut(c.in, c.max); got != c.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
}

// Characters that show nothing, though Unicode counts them printable, are
// escaped: a name with one inside must not read as the name without it.
func TestInvisibleCharactersEscaped(t *testing.T) {
	for _, r := range []rune{0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180B, 0x2800, 0x3164, 0xFE00, 0xFE0F, 0xFFA0, 0xE0100, 0xE01EF} {
		in := "ss" + string(r) + "h"
		out := Field(in, Name)
		if strings.ContainsRune(out, r) || out == "ssh" {
			t.Errorf("U+%04X is shown as it is: Field(%q) = %q", r, in, out)
		}
		if back, ok := unescape(out); !ok || back != in {
			t.Errorf("Field(%q) = %q does not give back the input", in, out)
		}
	}
}

// Token quotes a name that would read as several words, or as a name and
// what follows it, and leaves a plain one as it is.
func TestToken(t *testing.T) {
	for in, want := range map[string]string{
		"ssh":            "ssh",
		"":               `""`,
		"git bash":       `"git bash"`,
		"claude (pid 1)": `"claude (pid 1)"`,
		"a←b":            `"a←b"`,
		`say "hi"`:       `"say \"hi\""`,
		"tab\there":      `"tab\there"`,
		// Parentheses, arrows and commas of other shapes read as the
		// ones a card puts between names.
		"claude（3988）":          `"claude（3988）"`,
		"claude\u2768pid\u2769": "\"claude\u2768pid\u2769\"",
		"bash⟵claude":           `"bash⟵claude"`,
		"git\U0001f850bash":     "\"git\U0001f850bash\"",
		"ssh，git":               `"ssh，git"`,
		// Plain names stay as they are, in any script.
		"git-remote-https": "git-remote-https",
		"python3.12":       "python3.12",
		"café":             "café",
		"日本語":              "日本語",
	} {
		if got := Token(in, Name); got != want {
			t.Errorf("Token(%q) = %s, want %s", in, got, want)
		}
	}
}

// Terminal escapes what a terminal acts on or hides in a message, and
// leaves what Field rendered (backslashes, the cut marker) as it was:
// applied twice, it changes nothing more.
func TestTerminal(t *testing.T) {
	rendered := Quote("a\\b\x1b", 0) + " " + Field(strings.Repeat("x", 80), 10)
	for in, want := range map[string]string{
		rendered:                     rendered,
		"bye\n\x1b[2J\u202eok\r\x07": `bye\n\x1b[2J\u202eok\r\x07`,
		"caf\xe9 \u200b…":            `caf\xe9 \u200b…`,
		"plain words, \"quoted\"":    "plain words, \"quoted\"",
	} {
		got := Terminal(in)
		if got != want || Terminal(got) != got {
			t.Errorf("Terminal(%q) = %q (again: %q), want %q", in, got, Terminal(got), want)
		}
	}
}

func TestUnmarked(t *testing.T) {
	in := Field(`<b>ssh<!-- & \x3c`, Line)
	if got, want := Unmarked(in), `\\x3cb\\x3essh\\x3c!-- \\x26 \\\\x3c`; got != want {
		t.Errorf("Unmarked(%q) = %q, want %q", in, got, want)
	}
}
