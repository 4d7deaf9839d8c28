package main

import (
	"slices"
	"testing"
)

// Flags may come before, between or after the operands, except after
// "--"; a command line's own flags stay its own.
func TestParseTakesFlagsAnywhere(t *testing.T) {
	for _, tt := range []struct {
		args     []string
		operands []string
		comment  string
		force    bool
	}{
		{[]string{"k1", "--comment", "c", "k2", "--force"}, []string{"k1", "k2"}, "c", true},
		{[]string{"--force", "k1"}, []string{"k1"}, "", true},
		{[]string{"k1", "--", "--force", "-"}, []string{"k1", "--force", "-"}, "", false},
		{[]string{"--comment", "--", "k1", "--force"}, []string{"k1", "--force"}, "--", false},
		{[]string{"-", "--comment=x"}, []string{"-"}, "x", false},
		{nil, nil, "", false},
	} {
		fs := newFlags("test", "")
		comment := fs.String("comment", "", "")
		force := fs.Bool("force", false, "")
		if err := parse(fs, tt.args); err != nil {
			t.Fatalf("%q: %v", tt.args, err)
		}
		if !slices.Equal(fs.Args(), tt.operands) || *comment != tt.comment || *force != tt.force {
			t.Errorf("%q: operands %q, comment %q, force %v; want %q, %q, %v", tt.args, fs.Args(), *comment, *force, tt.operands, tt.comment, tt.force)
		}
	}

	fs := newFlags("run", "")
	label := fs.String("label", "", "")
	if err := parseCommand(fs, []string{"--label", "l", "claude", "--label", "x"}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"claude", "--label", "x"}; *label != "l" || !slices.Equal(fs.Args(), want) {
		t.Errorf("a command line: label %q, operands %q; want l, %q", *label, fs.Args(), want)
	}

	fs = newFlags("test", "")
	fs.Bool("force", false, "")
	if err := parse(fs, []string{"k1", "--nope"}); err == nil || err.Error() != "test: unknown flag --nope" {
		t.Errorf("an unknown flag after an operand: %v", err)
	}
}
