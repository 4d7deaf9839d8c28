package audit

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// The writing half of the direct JSON path (see eventjson.go):
// AppendEventJSON writes what json.Marshal writes, for an event the
// writer seals.

// AppendEventJSON appends the JSON encoding of e to dst: the bytes
// json.Marshal(e) returns, and its error (a time it cannot encode).
func AppendEventJSON(dst []byte, e *Event) ([]byte, error) {
	if out, ok := appendEvent(dst, e); ok {
		return out, nil
	}
	js, err := json.Marshal(e)
	return append(dst, js...), err
}

// jsonWriter appends object members, a comma before all but the first.
type jsonWriter struct {
	b     []byte
	first bool
	ok    bool // false once a time could not be encoded
}

func (w *jsonWriter) key(k string) {
	if !w.first {
		w.b = append(w.b, ',')
	}
	w.first = false
	w.b = append(w.b, '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, '"', ':')
}

func (w *jsonWriter) str(k, v string, omitEmpty bool) {
	if omitEmpty && v == "" {
		return
	}
	w.key(k)
	w.b = appendJSONString(w.b, v)
}

func (w *jsonWriter) uint(k string, v uint64, omitEmpty bool) {
	if omitEmpty && v == 0 {
		return
	}
	w.key(k)
	w.b = strconv.AppendUint(w.b, v, 10)
}

func (w *jsonWriter) int(k string, v int, omitEmpty bool) {
	if omitEmpty && v == 0 {
		return
	}
	w.key(k)
	w.b = strconv.AppendInt(w.b, int64(v), 10)
}

func (w *jsonWriter) time(k string, t time.Time, omitZero bool) {
	if omitZero && t.IsZero() {
		return
	}
	w.key(k)
	w.b = append(w.b, '"')
	b, err := t.AppendText(w.b)
	if err != nil {
		w.ok = false
		return
	}
	w.b = append(b, '"')
}

func (w *jsonWriter) open() { w.b, w.first = append(w.b, '{'), true }

func (w *jsonWriter) close() { w.b, w.first = append(w.b, '}'), false }

func appendEvent(dst []byte, e *Event) ([]byte, bool) {
	w := jsonWriter{b: dst, ok: true}
	w.open()
	w.uint("seq", e.Seq, true)
	w.str("type", string(e.Type), false)
	w.time("time", e.Time, false)
	w.str("boot_id", e.BootID, true)
	w.str("prev_boot_id", e.PrevBootID, true)
	w.uint("vault_epoch", e.VaultEpoch, false)
	w.str("run", e.Run, true)
	w.str("grant", e.Grant, true)
	w.str("card", e.Card, true)
	w.str("reason", string(e.Reason), true)
	w.str("key", e.Key, true)
	w.str("dest", e.Dest, true)
	if len(e.DestNames) > 0 {
		w.key("dest_names")
		w.b = append(w.b, '[')
		for i, n := range e.DestNames {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.b = appendJSONString(w.b, n)
		}
		w.b = append(w.b, ']')
	}
	if e.Forwarding {
		w.key("forwarding")
		w.b = append(w.b, "true"...)
	}
	w.str("mode", string(e.Mode), true)
	w.str("approver", e.Approver, true)
	w.str("label", e.Label, true)
	if p := e.Process; p != nil {
		w.key("process")
		w.open()
		w.int("pid", p.PID, false)
		w.time("start", p.Start, true)
		w.uint("start_ticks", p.StartTicks, true)
		w.str("exe", p.Exe, true)
		w.str("exe_sha256", p.ExeSHA256, true)
		w.str("signer", p.Signer, true)
		w.int("uid", p.UID, false)
		w.int("ppid", p.PPID, true)
		w.time("parent_start", p.ParentStart, true)
		w.close()
	}
	if len(e.Detail) > 0 {
		w.key("detail")
		w.open()
		var room [16]string
		keys := room[:0]
		for k := range e.Detail {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if !w.first {
				w.b = append(w.b, ',')
			}
			w.first = false
			w.b = appendJSONString(w.b, k)
			w.b = append(w.b, ':')
			w.b = appendJSONString(w.b, e.Detail[k])
		}
		w.close()
	}
	w.close()
	return w.b, w.ok
}

// appendJSONString appends s quoted as encoding/json quotes strings (HTML
// characters escaped, invalid UTF-8 as U+FFFD).
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
