package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// doc/invariants.md names, for each of the design's invariants, the
// tests that hold it: each list item names package directories and the
// tests in them, in backquotes. Every test it names exists, so that the
// page cannot go on naming a test that was renamed or removed.
func TestInvariantsNameLiveTests(t *testing.T) {
	root := filepath.Join("..", "..")
	b, err := os.ReadFile(filepath.Join(root, "doc", "invariants.md"))
	if err != nil {
		t.Fatal(err)
	}
	quoted := regexp.MustCompile("`([^`]+)`")
	named, sections := 0, 0
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(line, "## ") {
			sections++
		}
		if !strings.HasPrefix(line, "- ") {
			continue
		}
		pkg, tests := "", 0
		for _, m := range quoted.FindAllStringSubmatch(line, -1) {
			word := m[1]
			if !strings.HasPrefix(word, "Test") {
				if st, err := os.Stat(filepath.Join(root, word)); err == nil && st.IsDir() {
					pkg = word
				}
				continue
			}
			if pkg == "" {
				t.Errorf("%s is named before any package: %s", word, line)
				continue
			}
			if !definedIn(t, filepath.Join(root, pkg), word) {
				t.Errorf("doc/invariants.md names %s in %s, which has no such test", word, pkg)
			}
			tests++
		}
		if tests == 0 {
			t.Errorf("an item names no test: %s", line)
		}
		named += tests
	}
	if sections != 11 || named < 11 {
		t.Fatalf("doc/invariants.md has %d sections naming %d tests, want the design's 11 invariants, each with its tests", sections, named)
	}
}

// definedIn reports whether a test file of dir defines the function name.
func definedIn(t *testing.T, dir, name string) bool {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "\nfunc "+name+"(") {
			return true
		}
	}
	return false
}
