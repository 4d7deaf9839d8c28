package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/postern/postern/internal/config"
)

// tomlLine is how a configuration example's first line begins: a table
// header or a setting.
var tomlLine = regexp.MustCompile(`^(\[\[?[a-z_]+\]\]?|[a-z_]+ *=)`)

// configExamples returns the configuration examples of the man pages
// (literal displays whose first line is a setting or a table) and of the
// Markdown guides (toml code blocks), each named by its file and line.
func configExamples(t *testing.T) map[string]string {
	t.Helper()
	root := filepath.Join("..", "..")
	examples := map[string]string{}
	pages, err := filepath.Glob(filepath.Join(root, "man", "*.[15]"))
	if err != nil {
		t.Fatal(err)
	}
	unescape := strings.NewReplacer(`\e`, `\`, `\(dq`, `"`, `\&`, "", `\-`, "-")
	for _, p := range pages {
		collect(t, p, examples, func(l string) bool { return strings.HasPrefix(l, ".Bd -literal") },
			func(l string) bool { return l == ".Ed" }, unescape.Replace, true)
	}
	guides := []string{filepath.Join(root, "README.md")}
	for _, pattern := range []string{"doc/*.md", "contrib/*/README.md"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		guides = append(guides, m...)
	}
	for _, g := range guides {
		collect(t, g, examples, func(l string) bool { return l == "```toml" },
			func(l string) bool { return l == "```" }, func(s string) string { return s }, false)
	}
	return examples
}

// collect adds to examples the blocks of file between a line open takes
// and one shut takes; when sniff is set, only those whose first line is
// a setting or a table.
func collect(t *testing.T, file string, examples map[string]string, open, shut func(string) bool, text func(string) string, sniff bool) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	start, n, block := 0, 0, []string(nil)
	for l := range strings.Lines(string(b)) {
		n++
		l = strings.TrimSuffix(l, "\n")
		switch {
		case start == 0 && open(l):
			start, block = n, nil
		case start != 0 && shut(l):
			if len(block) > 0 && (!sniff || tomlLine.MatchString(block[0])) {
				examples[fmt.Sprintf("%s:%d", filepath.Base(file), start)] = strings.Join(block, "\n") + "\n"
			}
			start = 0
		case start != 0:
			block = append(block, text(l))
		}
	}
}

// TestDocConfigExamplesParse: every configuration example the man pages
// and guides show is one postern reads, so that none shows a value the
// configuration refuses (a host pattern with "!", a relative path).
func TestDocConfigExamplesParse(t *testing.T) {
	examples := configExamples(t)
	if len(examples) < 5 {
		t.Fatalf("found %d configuration examples; the scan missed them", len(examples))
	}
	for where, text := range examples {
		if _, err := config.Parse(where, []byte(text)); err != nil {
			t.Errorf("the example at %s is refused: %v\n%s", where, err, text)
		}
	}
}
