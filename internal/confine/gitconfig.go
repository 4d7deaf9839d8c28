package confine

import (
	"bytes"
	"path/filepath"
	"strings"

	"github.com/postern/postern/internal/smallfile"
)

// A gitSetting is one key of a git configuration file: its section as
// git names it ("core", "includeif.gitdir:~/work/"), its key, both
// lower-cased except the subsection, and its value.
type gitSetting struct{ section, key, value string }

// maxGitFile bounds what is read of a git file a run may have written (a
// configuration, a .git or gitdir file): far above a real one. Such a
// file may also be a FIFO or a link to a device (package smallfile).
const maxGitFile = 4 << 20

// readGitConfig reads the settings of the git configuration file at p
// as git reads them (config.c): sections with and without a quoted
// subsection, comments, values quoted in parts, escapes and lines
// continued with a backslash, so that a file git includes is never
// missed. Where git would refuse the file (and so use none of it), the
// rest of the line is skipped; a missing file has no settings.
func readGitConfig(p string) []gitSetting {
	b, err := smallfile.Read(p, maxGitFile)
	if err != nil {
		return nil
	}
	return parseGitConfig(b)
}

// gitConfigReader reads a configuration file a byte at a time as git's
// get_next_char does: "\r\n" is one newline, and the end is one too.
type gitConfigReader struct {
	b   []byte
	eof bool
}

func (r *gitConfigReader) next() byte {
	if len(r.b) == 0 {
		r.eof = true
		return '\n'
	}
	c := r.b[0]
	r.b = r.b[1:]
	if c == '\r' && len(r.b) > 0 && r.b[0] == '\n' {
		c, r.b = '\n', r.b[1:]
	}
	return c
}

// skipLine passes over the rest of a line git would refuse.
func (r *gitConfigReader) skipLine() {
	for !r.eof && r.next() != '\n' {
	}
}

func gitSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func gitKeyChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func parseGitConfig(b []byte) []gitSetting {
	r := &gitConfigReader{b: bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))}
	var out []gitSetting
	section := ""
	comment := false
	for {
		c := r.next()
		switch {
		case c == '\n':
			if r.eof {
				return out
			}
			comment = false
		case comment || gitSpace(c):
		case c == '#' || c == ';':
			comment = true
		case c == '[':
			var ok bool
			if section, ok = r.sectionHeader(); !ok {
				section = ""
				r.skipLine()
			}
		case gitKeyChar(c) && c > '9' && c != '-' && section != "": // a key starts with a letter
			key, value, ok := r.setting(c)
			if !ok {
				r.skipLine()
				continue
			}
			if st, ok := gitCString(section, key, value); ok {
				out = append(out, st)
			}
		default:
			r.skipLine()
		}
	}
}

// gitCString is a setting as git uses it: its name and value are C
// strings, which end at a NUL ("path = a\x00b" includes a).
func gitCString(section, key, value string) (gitSetting, bool) {
	name := section + "." + key
	name, _, _ = strings.Cut(name, "\x00")
	value, _, _ = strings.Cut(value, "\x00")
	i := strings.LastIndexByte(name, '.')
	if i < 0 {
		return gitSetting{}, false
	}
	return gitSetting{name[:i], name[i+1:], value}, true
}

// sectionHeader reads what follows '[': a name, lower-cased, and a
// quoted subsection kept as written ("includeif.gitdir:~/work/").
func (r *gitConfigReader) sectionHeader() (string, bool) {
	var name []byte
	c := r.next()
	for ; c != ']'; c = r.next() {
		switch {
		case r.eof:
			return "", false
		case gitSpace(c):
			return r.subsection(name, c)
		case !gitKeyChar(c) && c != '.':
			return "", false
		}
		name = append(name, lower(c))
	}
	return string(name), true
}

func (r *gitConfigReader) subsection(name []byte, c byte) (string, bool) {
	for ; gitSpace(c); c = r.next() {
		if c == '\n' {
			return "", false
		}
	}
	if c != '"' {
		return "", false
	}
	name = append(name, '.')
	for {
		c := r.next()
		switch c {
		case '"':
			return string(name), r.next() == ']'
		case '\\': // escapes the next byte
			c = r.next()
		}
		if c == '\n' {
			return "", false
		}
		name = append(name, c)
	}
}

// setting reads a key that starts with c, lower-cased, and its value,
// "" for a key alone.
func (r *gitConfigReader) setting(c byte) (key, value string, ok bool) {
	k := []byte{lower(c)}
	for c = r.next(); !r.eof && gitKeyChar(c); c = r.next() {
		k = append(k, lower(c))
	}
	for c == ' ' || c == '\t' {
		c = r.next()
	}
	switch c {
	case '\n':
		return string(k), "", true
	case '=':
		v, ok := r.value()
		return string(k), v, ok
	}
	return "", "", false
}

// value reads a value as git's parse_value does: quotes around any part
// of it, spaces kept inside quotes and between words, comments outside
// quotes, escapes, and a backslash at a line's end joining the next.
func (r *gitConfigReader) value() (string, bool) {
	var v []byte
	quote, comment, space := false, false, 0
	for {
		c := r.next()
		switch {
		case c == '\n':
			return string(v), !quote
		case comment:
			continue
		case gitSpace(c) && !quote:
			if len(v) > 0 {
				space++
			}
			continue
		case !quote && (c == ';' || c == '#'):
			comment = true
			continue
		}
		for ; space > 0; space-- {
			v = append(v, ' ')
		}
		switch c {
		case '\\':
			switch c = r.next(); c {
			case '\n':
				if r.eof {
					return "", false
				}
				continue
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'n':
				c = '\n'
			case '\\', '"':
			default:
				return "", false
			}
		case '"':
			quote = !quote
			continue
		}
		v = append(v, c)
	}
}

// gitPath resolves a path a git configuration file at config names: ~/
// from the home directory, a relative one from the file's directory.
func gitPath(config, v, home string) string {
	switch {
	case v == "":
		return ""
	case strings.HasPrefix(v, "~/"):
		if home == "" {
			return ""
		}
		v = filepath.Join(home, v[2:])
	case !filepath.IsAbs(v):
		v = filepath.Join(filepath.Dir(config), v)
	}
	return filepath.Clean(v)
}

// maxIncludes bounds the files that includes bring in, as git bounds
// their depth.
const maxIncludes = 64

// gitIncludes returns the files the configuration files configs include
// (include.path, and includeIf's path whatever its condition), and the
// files those include in turn.
func gitIncludes(configs []string, home string) []string {
	var out []string
	seen := map[string]bool{}
	queue := append([]string(nil), configs...)
	for len(queue) > 0 && len(out) < maxIncludes {
		c := queue[0]
		queue = queue[1:]
		for _, st := range readGitConfig(c) {
			if st.key != "path" || (st.section != "include" && !strings.HasPrefix(st.section, "includeif.")) {
				continue
			}
			p := gitPath(c, st.value, home)
			if p == "" || seen[p] {
				continue
			}
			seen[p] = true
			out = append(out, p)
			queue = append(queue, p)
		}
	}
	return out
}
