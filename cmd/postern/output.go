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
//     internal/safetext (shown) before a person sees it; a diagnostic,
//     which may hold words from elsewhere inside an error, is rendered
//     whole (safetext.Terminal).
//   - Exit status: see exitcode.go.

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/postern/postern/internal/safetext"
)

func errorf(w io.Writer, format string, args ...any) { diagnostic(w, "error", format, args) }

func warningf(w io.Writer, format string, args ...any) { diagnostic(w, "warning", format, args) }

func hintf(w io.Writer, format string, args ...any) { diagnostic(w, "hint", format, args) }

// diagnostic writes one line of standard error. An error can hold words
// no one rendered (a remote server's, inside a network error): they are
// escaped there too (safetext.Terminal).
func diagnostic(w io.Writer, kind, format string, args []any) {
	fmt.Fprintf(w, "postern: %s: %s\n", kind, safetext.Terminal(fmt.Sprintf(format, args...)))
}

// timeLayout is how the command line shows a moment: the date is part of
// it, so that a line read days later is not ambiguous.
const timeLayout = "2006-01-02 15:04:05"

// plural writes a count with its noun: "1 key", "2 keys", "3 entries".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if stem, ok := strings.CutSuffix(noun, "ry"); ok {
		return strconv.Itoa(n) + " " + stem + "ries"
	}
	return strconv.Itoa(n) + " " + noun + "s"
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

// nonNil returns s, or an empty slice for nil: a listing prints [] for
// nothing, never null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
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

// shownName renders the name of a process or a run among other words,
// quoted when it holds a space, a parenthesis or an arrow (safetext.Token):
// "x (pid 1)  (proposed)" never reads as the run a card proposes.
func shownName(s string) string { return safetext.Token(s, safetext.Name) }

// jsonArray writes a JSON array one element at a time, indented as
// printJSON indents a whole array, so that a long listing is printed as it
// is read.
type jsonArray struct {
	w   io.Writer
	n   int
	err error
}

func (a *jsonArray) add(v any) error {
	if a.err != nil {
		return a.err
	}
	b, err := json.MarshalIndent(v, "  ", "  ")
	if err != nil {
		a.err = err
		return err
	}
	sep := ",\n  "
	if a.n == 0 {
		sep = "[\n  "
	}
	if _, err := io.WriteString(a.w, sep); err != nil {
		a.err = err
		return err
	}
	_, a.err = a.w.Write(b)
	a.n++
	return a.err
}

// cut says of err, which ended the listing, that the array printed so far
// is incomplete: it is left unclosed, so that no JSON reader takes it for
// the whole listing.
func (a *jsonArray) cut(err error) error {
	if err == nil || a.n == 0 {
		return err
	}
	return fmt.Errorf("%w (the JSON array printed stops at element %d, unclosed: the listing is incomplete)", err, a.n)
}

// close ends the array ("[]" when it is empty).
func (a *jsonArray) close() error {
	if a.err != nil {
		return a.err
	}
	end := "\n]\n"
	if a.n == 0 {
		end = "[]\n"
	}
	_, a.err = io.WriteString(a.w, end)
	return a.err
}
