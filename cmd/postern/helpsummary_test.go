package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestHelpSummaryMatchesEachCommand: each command's line in "postern
// --help" names only flags the command takes (in a form its own --help
// shows), a flag after a choice of subcommands is one each of them
// takes, and a line that names the command's flags names --json when
// one of its forms prints a listing with it, so that a script's writer
// who reads the summary learns of it.
func TestHelpSummaryMatchesEachCommand(t *testing.T) {
	forms := usageForms(t)
	flag := regexp.MustCompile(`--[a-z][a-z-]*`)
	choice := regexp.MustCompile(`^\S+ \[([^][]+)\]((?: \[--[a-z-]+\])+)`)
	seen := 0
	for l := range strings.Lines(usage) {
		// A command's line starts four spaces in; its description,
		// further in.
		rest, ok := strings.CutPrefix(l, "    ")
		if !ok || strings.HasPrefix(rest, " ") {
			continue
		}
		name := strings.Fields(rest)[0]
		if _, ok := commands[name]; !ok {
			continue
		}
		seen++
		var takes []string
		for form, flags := range forms {
			if strings.Fields(form)[0] == name {
				takes = append(takes, flags...)
			}
		}
		named := flag.FindAllString(rest, -1)
		for _, f := range named {
			if !slices.Contains(takes, f) {
				t.Errorf("postern --help shows %q, but postern %s takes no %s", strings.TrimSpace(rest), name, f)
			}
		}
		// A flag after a choice of subcommands ("journal [list|show
		// ID] [--json]") goes with each of them.
		if m := choice.FindStringSubmatch(strings.TrimSpace(rest)); m != nil {
			for _, alt := range strings.Split(m[1], "|") {
				form := name
				if sub := strings.Fields(alt)[0]; sub != strings.ToUpper(sub) {
					form += " " + sub
				}
				if _, ok := forms[form]; !ok && form != name {
					// list, the form without a subcommand
					form = name
				}
				for _, f := range flag.FindAllString(m[2], -1) {
					if !slices.Contains(forms[form], f) {
						t.Errorf("postern --help shows %q, but postern %s takes no %s", strings.TrimSpace(rest), form, f)
					}
				}
			}
		}
		// A line of subcommands alone (vault init|add|…) leaves their
		// flags to the command's --help.
		if len(named) > 0 && slices.Contains(takes, "--json") && !slices.Contains(named, "--json") {
			t.Errorf("postern --help shows %q, which does not say that postern %s takes --json", strings.TrimSpace(rest), name)
		}
	}
	if seen < 10 {
		t.Fatalf("postern --help: %d command lines found", seen)
	}
}
