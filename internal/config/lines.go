package config

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"

	"github.com/postern/postern/internal/safetext"
)

// settingError is a bad value, located so that the error can name the
// line it came from: Key in table Table ("" for the top level), the N-th
// of an array of tables such as [[rule]] (from 1; 0 for a plain table;
// -1 for the first of them that holds Key).
// Key "" stands for the table itself.
type settingError struct {
	Table string
	N     int
	Key   string
	Msg   string
}

func (e *settingError) Error() string { return e.Msg }

// quoted quotes a value of the file for an error, escaped and cut: the
// file, which any program of the user can write, chooses its length,
// and the error is logged, kept in status and printed.
func quoted(s string) string { return safetext.Quote(s, safetext.Path) }

// badSetting makes a settingError for key in a plain table.
func badSetting(table, key, format string, args ...any) error {
	return &settingError{Table: table, Key: key, Msg: fmt.Sprintf(format, args...)}
}

// settingLine finds the line (from 1) of setting key in src: at the top
// level (table ""), in [table], or in the n-th [[table]] (n from 1). For
// key "", or a key it cannot find, it returns the table's header line
// (the first one's, for n -1, which searches each of the array's tables); 0
// when there is no such table (or, at the top level, no such key). It
// reads the file as lines, skipping multi-line strings, which is enough
// for what a person writes; a value in an inline table gets its table's
// line, or, for a table of an array written inline (rule = [{…}]), the
// line of that array's key.
func settingLine(src []byte, table string, n int, key string) int {
	if line := headedLine(src, table, n, key); line > 0 || table == "" {
		return line
	}
	return headedLine(src, "", 0, table)
}

// headedLine is settingLine for a table written with its header.
func headedLine(src []byte, table string, n int, key string) int {
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 0, 4096), MaxSize)
	var (
		line, seen, header int
		in                 = table == ""
		multi              string // the delimiter of an open multi-line string
	)
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if multi != "" {
			if strings.Count(text, multi)%2 == 1 {
				multi = ""
			}
			continue
		}
		for _, d := range []string{`"""`, `'''`} {
			if strings.Count(text, d)%2 == 1 {
				multi = d
			}
		}
		if strings.HasPrefix(text, "[") {
			if table == "" || in && header > 0 && n >= 0 {
				break // the top level, or the table, ended
			}
			array := strings.HasPrefix(text, "[[")
			name := strings.Join(strings.Fields(strings.Trim(strings.SplitN(text, "#", 2)[0], " \t[]")), "")
			match := strings.Trim(name, `"'`) == table && array == (n != 0)
			if n < 0 {
				// Any of the array's tables: each is searched in turn.
				in = match
				if match && header == 0 {
					header = line
				}
				continue
			}
			if match {
				seen++
				if n == 0 || seen == n {
					in, header = true, line
				}
			}
			continue
		}
		if in && key != "" {
			k, _, ok := strings.Cut(text, "=")
			if ok && strings.Trim(strings.TrimSpace(k), `"'`) == key {
				return line
			}
		}
	}
	return header
}

// unknownLine finds the line (from 1) of k, a setting the decoder did
// not know: the header of a table by that name, or the line of the key
// in the table (a plain one, or any of an array's) that its first parts
// name; 0 when neither is found.
func unknownLine(src []byte, k []string) int {
	name := strings.Join(k, ".")
	for _, n := range []int{0, -1} {
		if line := headedLine(src, name, n, ""); line > 0 {
			return line
		}
	}
	for i := len(k) - 1; i >= 1; i-- {
		table, key := strings.Join(k[:i], "."), strings.Join(k[i:], ".")
		for _, n := range []int{0, -1} {
			if line := headedLine(src, table, n, key); line > 0 && line != headedLine(src, table, n, "") {
				return line
			}
		}
	}
	// A top-level key, or one in a table written inline (its key's line).
	return headedLine(src, "", 0, k[0])
}
