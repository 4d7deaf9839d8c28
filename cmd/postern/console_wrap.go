package main

// How the consoles fit a line to a terminal's width. A terminal cuts a
// line wider than its window (or a program turned its line wrapping off),
// and what is cut is what a requester made long: the end of a command, of
// a host or of a chain of processes. So the consoles break every line
// wider than the terminal themselves, at any character (a space at a
// break is kept, never eaten), and start each continuation line with
// "↳ ", so that a person sees the whole line and where it goes on.
//
// Terminals do not agree on how wide some characters are: East Asian
// characters of ambiguous width and many emoji take one column on one
// terminal and two on another. A line is measured with the wider count
// of every character, so that it fits whichever count the terminal uses.

import (
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
	"github.com/mattn/go-runewidth"
	"golang.org/x/term"
)

// contMark starts a line that continues the line above it.
const contMark = "↳ "

var (
	narrowWidths = &runewidth.Condition{EastAsianWidth: false, StrictEmojiNeutral: true}
	wideWidths   = &runewidth.Condition{EastAsianWidth: true, StrictEmojiNeutral: false}
)

// cellWidth is the most columns any terminal gives the printable text g
// (one character and its combining marks, or several): the widest of the
// counts by grapheme, by character, and by character with ambiguous
// widths and emoji as East Asian terminals count them.
func cellWidth(g string) int {
	w := max(ansi.StringWidth(g), ansi.StringWidthWc(g))
	narrow, wide := 0, 0
	for _, r := range g {
		narrow += narrowWidths.RuneWidth(r)
		wide += wideWidths.RuneWidth(r)
	}
	return max(w, narrow, wide)
}

// textWidth is the most columns line takes on any terminal; escape
// sequences (the console's own styles) take none.
func textWidth(line string) int {
	w := 0
	var state byte
	for line != "" {
		seq, _, n, next := ansi.DecodeSequence(line, state, nil)
		if printable(seq) {
			w += cellWidth(seq)
		}
		line, state = line[n:], next
	}
	return w
}

// printable reports whether seq, a piece ansi.DecodeSequence cut, is
// text rather than a control character or an escape sequence.
func printable(seq string) bool {
	r, _ := utf8.DecodeRuneInString(seq)
	return r >= 0x20 && r != 0x7f && (r < 0x80 || r > 0x9f)
}

// wrap breaks each line of s that is wider than width columns (textWidth)
// into lines of at most width columns, each continuation starting with
// contMark. A width of 0 or less leaves s as it is.
func wrap(s string, width int) string {
	if width <= 0 {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(wrapLine(l, width), "\n")
	}
	return strings.Join(lines, "\n")
}

// wrapLine breaks one line (no newline in it) as wrap does. Each line
// holds one character at least, however narrow the width.
func wrapLine(line string, width int) []string {
	if textWidth(line) <= width {
		return []string{line}
	}
	mark := contMark
	if cellWidth(contMark) >= width {
		mark = "" // too narrow for the mark and a character
	}
	var out []string
	var cur strings.Builder
	used, chars := 0, 0
	var state byte
	for line != "" {
		seq, _, n, next := ansi.DecodeSequence(line, state, nil)
		line, state = line[n:], next
		if !printable(seq) {
			cur.WriteString(seq)
			continue
		}
		w := cellWidth(seq)
		if chars > 0 && used+w > width {
			out = append(out, cur.String())
			cur.Reset()
			cur.WriteString(mark)
			used, chars = textWidth(mark), 0
		}
		cur.WriteString(seq)
		used += w
		chars++
	}
	return append(out, cur.String())
}

// termWidth is the width of w when it is a terminal, else 0 (no wrap).
func termWidth(w io.Writer) int {
	if c, ok := w.(*checkedWriter); ok {
		w = c.w
	}
	f, ok := w.(*os.File)
	if !ok || !isTerminal(f) {
		return 0
	}
	cols, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return cols
}
