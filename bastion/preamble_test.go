package bastion

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
)

func TestPreambleRoundTrip(t *testing.T) {
	for _, tgt := range []Target{{"root", "prod-db-1", 22}, {"git", "example.com", 2222}, {"u+x", "10.0.0.5", 65535}} {
		var b bytes.Buffer
		if err := writePreamble(&b, tgt); err != nil {
			t.Fatal(err)
		}
		got, err := readPreamble(bufio.NewReader(&b))
		if err != nil || got != tgt {
			t.Fatalf("%+v: got %+v %v", tgt, got, err)
		}
	}
	for _, bad := range []string{
		"", "\n", "SSH-2.0-OpenSSH_9.2\n", "postern-connect/1 root host\n", "postern-connect/1 root host 0\n",
		"postern-connect/1 root host 70000\n", "postern-connect/1 root %zz 22\n", "postern-connect/2 root host 22\n",
		"postern-connect/1 root " + strings.Repeat("h", 2000) + " 22\n",
	} {
		if _, err := readPreamble(bufio.NewReader(strings.NewReader(bad))); err == nil {
			t.Errorf("preamble %q accepted", bad)
		}
	}
	if _, err := ParseTarget("root", "a/b", "22"); err == nil {
		t.Error("host with a slash accepted")
	}
}

func FuzzPreamble(f *testing.F) {
	f.Add([]byte("postern-connect/1 root prod-db-1 22\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tgt, err := readPreamble(bufio.NewReader(bytes.NewReader(b)))
		if err == nil && (tgt.Port < 1 || tgt.Port > 65535 || tgt.Host == "" || tgt.User == "") {
			t.Fatalf("accepted %+v", tgt)
		}
	})
}
