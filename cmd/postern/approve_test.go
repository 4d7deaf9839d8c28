package main

import (
	"errors"
	"strings"
	"testing"
)

// --json on a terminal was ignored: the console started and printed no
// JSON. It is a usage error, as --line and --json are wherever they
// would be ignored; each form that uses them is still taken.
func TestApproveOutputConflict(t *testing.T) {
	for _, c := range []struct {
		list, line, json bool
		id               string
		tty              bool
		refused          string
	}{
		{json: true, tty: true, refused: "--json prints cards for a program"},
		{line: true, tty: false, refused: "--line asks on a terminal"},
		{list: true, line: true, tty: true, refused: "--line is the console's"},
		{id: "C1", json: true, tty: true, refused: "--json is for --list"},
		{json: true, tty: false},
		{line: true, tty: true},
		{list: true, json: true, tty: true},
		{id: "C1", tty: false},
		{tty: true},
	} {
		err := approveOutputConflict(c.list, c.line, c.json, c.id, c.tty)
		switch {
		case c.refused == "" && err != nil:
			t.Errorf("%+v refused: %v", c, err)
		case c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused)):
			t.Errorf("%+v: %v, want a usage error saying %q", c, err, c.refused)
		case c.refused != "" && !errors.As(err, new(*usageError)):
			t.Errorf("%+v: %T, want a usage error (exit 2)", c, err)
		}
	}
}
