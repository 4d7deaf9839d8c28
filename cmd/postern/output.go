package main

// This file holds the command line's rules for talking to people:
//   - Diagnostics go to standard error, one line each, prefixed
//     "postern: error: ", "postern: warning: " or "postern: hint: ",
//     lower-case, no trailing period. A library's error says what failed;
//     the hint that names a command or a flag is added here, at the edge
//     (see report in exitcode.go).
//   - Results go to standard output; every listing command takes --json.
//   - Secrets are read from the terminal (/dev/tty), an askpass program
//     or the documented passphrase file, never from arguments.
//   - Every string that came from a requester or a file is rendered by
//     internal/safetext (shown) before a person sees it.
//   - Exit status: see exitcode.go.

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/postern/postern/internal/safetext"
)

func errorf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "postern: error: "+format+"\n", args...)
}

func warningf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "postern: warning: "+format+"\n", args...)
}

func hintf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "postern: hint: "+format+"\n", args...)
}

// printJSONLines writes one JSON object per line.
func printJSONLines[T any](w io.Writer, items []T) error {
	enc := json.NewEncoder(w)
	for _, it := range items {
		if err := enc.Encode(it); err != nil {
			return err
		}
	}
	return nil
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// shown renders a name that came from a requester or a file (a process,
// a host, a label) for a person: see safetext. JSON output carries the
// raw strings.
func shown(s string) string { return safetext.Field(s, safetext.Name) }
