package api

import (
	"strings"
	"testing"
)

func TestAnchorRoundTrip(t *testing.T) {
	a := AuditAnchor{LogID: strings.Repeat("0a", 16), Seq: 42, Link: strings.Repeat("f0", 32)}
	line := FormatAnchor(a)
	for _, in := range []string{line, line + "\n", "Nov 30 host postern[4]: " + line + " trailing", "  " + line} {
		if got, err := ParseAnchor(in); err != nil || got != a {
			t.Errorf("ParseAnchor(%q) = %+v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "postern-audit-anchor 1", "postern-audit-anchor 1 00 1 00",
		strings.Replace(line, " 42 ", " -1 ", 1), strings.Replace(line, "0a0a", "zz0a", 1), line[:len(line)-2]} {
		if _, err := ParseAnchor(bad); err == nil {
			t.Errorf("ParseAnchor(%q) accepted", bad)
		}
	}
}

func FuzzParseAnchor(f *testing.F) {
	f.Add(FormatAnchor(AuditAnchor{LogID: strings.Repeat("0a", 16), Seq: 1, Link: strings.Repeat("ff", 32)}))
	f.Add("postern-audit-anchor 1 x y z")
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAnchor(s)
		if err != nil {
			return
		}
		if b, err := ParseAnchor(FormatAnchor(a)); err != nil || b != a {
			t.Fatalf("%q: round trip %+v %v", s, b, err)
		}
	})
}
