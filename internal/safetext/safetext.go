// Package safetext renders strings that came from a requester or from a
// file (executable names and paths, command lines, user and host names,
// remote commands, key comments) for a person to read. It is the one
// renderer every human-facing output uses: approval cards on a terminal
// or in an askpass dialog, and the listings of the command line. Consumers
// of JSON get the raw strings; people never do.
//
// A rendered field is one line of printable text that means exactly one
// input:
//
//   - a backslash becomes \\;
//   - newline, carriage return and tab become \n, \r and \t; every other
//     C0 control, DEL and a byte that is not UTF-8 become \xHH (so an
//     escape sequence shows as \x1b[...);
//   - a character that is not printable — C1 controls, bidirectional
//     overrides and isolates, zero-width and other format characters,
//     line and paragraph separators, spaces other than U+0020, private
//     use and unassigned code points — becomes \uXXXX or \UXXXXXXXX;
//   - a character that shows nothing though Unicode counts it printable
//     (the combining grapheme joiner, Hangul fillers, variation selectors,
//     the blank Braille pattern) becomes \uXXXX or \UXXXXXXXX too: "ssh"
//     with one of them inside would read as "ssh";
//   - a combining mark is shown only on a character shown as it is, and
//     at most maxMarks on one: one at the start of a field (it would
//     change the character before the field), one after an escape (it
//     would change the escape) and one past maxMarks (marks stacked on
//     one character spread over the lines above and below it in a
//     dialog) become \uXXXX;
//   - "…" (U+2026) becomes \u2026: it is reserved for the cut marker.
//
// Everything else is shown as it is ([Quote] also shows a double quote as
// \", for a value between quotes). A field longer than its limit is cut
// at a character boundary (never inside an escape) and ends with the
// marker "…(+N bytes)", N counting the input bytes not shown.
package safetext

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits for the kinds of fields, in runes of output.
const (
	Name    = 64   // a process, host, user or key name, a label, a namespace
	Path    = 200  // an executable path
	Command = 400  // a remote command or a claimed command line
	Line    = 1000 // anything else shown on one line
)

// Marker starts the suffix of a cut field.
const Marker = "…"

// maxMarks is how many combining marks one character is shown with
// (three: a Vietnamese or Thai letter takes two).
const maxMarks = 3

// Field renders s on one line, cut to limit runes (limit <= 0: no cut).
func Field(s string, limit int) string { return render(s, limit) }

// Bytes renders b as Field renders a string.
func Bytes(b []byte, limit int) string { return render(string(b), limit) }

// Whole reports whether Field(s, limit) shows all of s, uncut.
func Whole(s string, limit int) bool {
	return limit <= 0 || utf8.RuneCountInString(render(s, 0)) <= limit
}

// Escape renders s on one line, uncut.
func Escape(s string) string { return render(s, 0) }

// Terminal renders a message made of parts rendered already (an error
// that quotes a requester's string) and parts that may not be (a remote
// server's words inside a network error): every character Field would
// escape is escaped, but for the backslash and "…", which rendered parts
// hold. What Field rendered comes out as it went in, and the message is
// one line a terminal only shows.
func Terminal(s string) string {
	out := make([]byte, 0, len(s))
	var piece [16]byte
	m := marks{on: -1}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == '\\' || r == '…' {
			out = append(out, s[i:i+size]...)
			m.shown(r, true)
		} else {
			p := escapeRune(piece[:0], s[i:i+size], r, size, m.bare(r))
			out = append(out, p...)
			m.shown(r, len(p) == size)
		}
		i += size
	}
	return string(out)
}

// Unmarked renders a text made of rendered parts (a card) for a program
// that may read markup and C escapes in it, such as an askpass dialog (a
// zenity script reads Pango markup, after GLib's g_strcompress has read
// \n and the like; a Qt dialog HTML when its first line holds a tag):
// "<", ">" and "&" become \x3c, \x3e and \x26, and every backslash is
// doubled, so that a program that reads C escapes shows the text as a
// terminal does, and one that does not shows each escape with its
// backslash doubled. A rendered part holds a backslash only doubled, so
// the text still means exactly one input.
func Unmarked(s string) string { return markup.Replace(s) }

var markup = strings.NewReplacer(`\`, `\\`, "<", `\\x3c`, ">", `\\x3e`, "&", `\\x26`)

// Quote renders s as Field does, between double quotes, with a double
// quote inside shown as \" and a double quote of another shape (“ ” ＂
// « » ″ ʺ…) as \uXXXX, as none ends the value: for a value a sentence
// quotes.
func Quote(s string, limit int) string {
	var b strings.Builder
	b.WriteByte('"')
	var piece [16]byte
	for _, r := range render(s, limit) {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case quoteLike(r):
			b.Write(escapeRune(piece[:0], string(r), r, utf8.RuneLen(r), true))
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// quoteLike reports whether r could read as a double quote: a quotation
// mark (but the apostrophe), a double prime, a ditto mark, or a mark
// drawn as two strokes above.
func quoteLike(r rune) bool {
	return r > 0x7f && (unicode.Is(unicode.Quotation_Mark, r) || strings.ContainsRune("\u2033\u2036\u02ba\u02dd\u3003\u030b\u030e", r))
}

// Token renders s as Field does, and between double quotes as Quote
// does when it holds anything but letters, combining marks, digits and
// "._+-@" (what plain program names are made of), or is empty: for a
// name that a line shows among other words, such as a process in a chain
// ("ssh (4121) ← \"git bash\""), so that it reads as one name, never as
// two, nor as a name and its pid, whatever shape its space, parenthesis,
// comma, quote or arrow has ("claude（3988）" is quoted too).
func Token(s string, limit int) string {
	if s == "" || strings.ContainsFunc(s, tokenBreak) {
		return Quote(s, limit)
	}
	return Field(s, limit)
}

// tokenBreak reports whether r makes Token quote a name.
func tokenBreak(r rune) bool {
	return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.M, r) && !strings.ContainsRune("._+-@", r)
}

// Cut returns s unrendered, or, when it is longer than limit bytes, its
// first limit bytes at most, cut at a character boundary and followed by
// the marker: for a string kept (in the audit log) rather than shown,
// whose size a requester chose.
func Cut(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	i := limit
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + Marker + "(+" + strconv.Itoa(len(s)-i) + " bytes)"
}

// Fields renders each of list with Field.
func Fields(list []string, limit int) []string { return each(list, limit, Field) }

// Quotes renders each of list with Quote: for a list whose items may
// hold the separator it is shown with.
func Quotes(list []string, limit int) []string { return each(list, limit, Quote) }

// Tokens renders each of list with Token: for a list of names joined by
// a separator Token quotes, such as a comma.
func Tokens(list []string, limit int) []string { return each(list, limit, Token) }

func each(list []string, limit int, render func(string, int) string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = render(s, limit)
	}
	return out
}

func render(s string, limit int) string {
	// The common case, a short plain ASCII name, is returned as it is.
	if plain(s) && (limit <= 0 || len(s) <= limit) {
		return s
	}
	out := make([]byte, 0, len(s)+8)
	runes := 0
	var piece [16]byte
	m := marks{on: -1}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		p := escapeRune(piece[:0], s[i:i+size], r, size, m.bare(r))
		m.shown(r, len(p) == size)
		n := utf8.RuneCount(p)
		if limit > 0 && runes+n > limit {
			return string(out) + Marker + "(+" + strconv.Itoa(len(s)-i) + " bytes)"
		}
		out = append(out, p...)
		runes += n
		i += size
	}
	return string(out)
}

// plain reports whether s is printable ASCII without a backslash.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '\\' {
			return false
		}
	}
	return true
}

const hexDigits = "0123456789abcdef"

// marks follows the characters a field shows, for the combining marks
// among them: how many were shown as they are on the last character shown
// as it is, or -1 when there is none (the start of a field, or an escape
// just before).
type marks struct{ on int }

// bare reports whether r is a combining mark that is not to be shown as
// it is: with no character shown as it is to sit on, or past maxMarks.
func (m *marks) bare(r rune) bool {
	return r >= 0x300 && unicode.Is(unicode.M, r) && (m.on < 0 || m.on >= maxMarks)
}

// shown notes that r was rendered, as it is (asIs) or escaped.
func (m *marks) shown(r rune, asIs bool) {
	switch {
	case !asIs:
		m.on = -1
	case r >= 0x300 && unicode.Is(unicode.M, r):
		m.on++
	default:
		m.on = 0
	}
}

// escapeRune appends the rendering of one input character (raw, decoded as
// r, size bytes long) to b; bare: r is a combining mark not to be shown
// as it is (marks.bare).
func escapeRune(b []byte, raw string, r rune, size int, bare bool) []byte {
	switch {
	case r == utf8.RuneError && size <= 1:
		return append(b, '\\', 'x', hexDigits[raw[0]>>4], hexDigits[raw[0]&0xf])
	case r == '\\':
		return append(b, '\\', '\\')
	case r == '\n':
		return append(b, '\\', 'n')
	case r == '\r':
		return append(b, '\\', 'r')
	case r == '\t':
		return append(b, '\\', 't')
	case r < 0x20 || r == 0x7f:
		return append(b, '\\', 'x', hexDigits[r>>4], hexDigits[r&0xf])
	case r < 0x7f:
		return append(b, byte(r))
	case r == '…', !unicode.IsPrint(r), Invisible(r), bare:
		if r > 0xffff {
			b = append(b, '\\', 'U')
			for shift := 28; shift >= 0; shift -= 4 {
				b = append(b, hexDigits[(r>>shift)&0xf])
			}
			return b
		}
		b = append(b, '\\', 'u')
		for shift := 12; shift >= 0; shift -= 4 {
			b = append(b, hexDigits[(r>>shift)&0xf])
		}
		return b
	}
	return append(b, raw...)
}

// Invisible reports whether r shows nothing, or next to nothing, though
// unicode.IsPrint counts it printable: the default-ignorable code points
// that are not format characters, the variation selectors, and the blank
// Braille pattern.
func Invisible(r rune) bool {
	return r == '\u2800' || unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) || unicode.Is(unicode.Variation_Selector, r)
}
