package audit

import (
	"encoding/json"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// An event is stored as the JSON that encoding/json makes of it. Reading a
// large log spends most of its time in encoding/json's reflection, so the
// events readers meet take a direct path here, which gives exactly what
// encoding/json gives (FuzzEventJSON compares the two): decodeEvent parses
// the JSON the writer produces (no whitespace, no escapes, each field once,
// keys as the writer spells them) and hands anything else to json.Unmarshal;
// AppendEventJSON writes what json.Marshal writes.

// decodeEvent decodes the JSON of an event into e, as json.Unmarshal into a
// zero Event does.
func decodeEvent(js []byte, e *Event) error {
	p := jsonParser{b: js}
	if p.event(e) && p.i == len(p.b) {
		return nil
	}
	*e = Event{}
	return json.Unmarshal(js, e)
}

// storedEventJSON reports whether js is the JSON of an event as the
// writer stores it: what AppendEventJSON writes for an event without
// escapes and without a seq, which decodeEvent reads without encoding/json.
// It makes no garbage (the strings, slices and maps are not made).
func storedEventJSON(js []byte) bool {
	var e Event
	p := jsonParser{b: js, check: true}
	return p.event(&e) && p.i == len(p.b)
}

// appendEventJSONAt appends the JSON of the event whose stored JSON is js
// (storedEventJSON) with its seq set: seq first, then js's fields as they
// are. For what the writer stores, whose fields are in AppendEventJSON's
// order, that is exactly what AppendEventJSON writes.
func appendEventJSONAt(dst []byte, seq uint64, js []byte) []byte {
	if seq == 0 {
		return append(dst, js...)
	}
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendUint(dst, seq, 10)
	if len(js) > 2 {
		dst = append(dst, ',')
	}
	return append(dst, js[1:]...)
}

// DecodeEventJSON decodes the JSON of an event (as AppendEventJSON or
// json.Marshal writes it) into e, as json.Unmarshal into a zero Event
// does, most often without reflection.
func DecodeEventJSON(js []byte, e *Event) error {
	*e = Event{}
	return decodeEvent(js, e)
}

// DecodeEventPrefix decodes the event whose JSON starts b, as
// DecodeEventJSON would, and returns the bytes it took; ok is false when b
// does not start with the JSON AppendEventJSON writes for an event without
// escapes (then nothing is decoded: use DecodeEventJSON on the event's
// bytes).
func DecodeEventPrefix(b []byte, e *Event) (n int, ok bool) {
	*e = Event{}
	p := jsonParser{b: b}
	if !p.event(e) {
		*e = Event{}
		return 0, false
	}
	return p.i, true
}

// jsonParser reads the JSON encoding/json writes. Each method reports false
// at anything else, and the caller falls back to encoding/json.
type jsonParser struct {
	b []byte
	i int
	// check reads without keeping what it reads (no string, slice or
	// map is made), for storedEventJSON.
	check bool
}

func (p *jsonParser) byte(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// object reads an object, calling field for each key; seen guards against
// repeated keys when field returns a bit per key.
func (p *jsonParser) object(field func(key []byte) (bit uint32, ok bool)) bool {
	if !p.byte('{') {
		return false
	}
	if p.byte('}') {
		return true
	}
	var seen uint32
	for {
		k, ok := p.rawString()
		if !ok || !p.byte(':') {
			return false
		}
		bit, ok := field(k)
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		if p.byte('}') {
			return true
		}
		if !p.byte(',') {
			return false
		}
	}
}

// rawString reads a string without escapes, control characters or invalid
// UTF-8, and returns its bytes (aliasing the input).
func (p *jsonParser) rawString() ([]byte, bool) {
	if !p.byte('"') {
		return nil, false
	}
	start, ascii := p.i, true
	for ; p.i < len(p.b); p.i++ {
		switch c := p.b[p.i]; {
		case c == '"':
			s := p.b[start:p.i]
			p.i++
			return s, ascii || utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

func (p *jsonParser) str(dst *string) bool {
	s, ok := p.rawString()
	if ok && !p.check {
		*dst = string(s)
	}
	return ok
}

// tm reads a time as time.Time's UnmarshalJSON does.
func (p *jsonParser) tm(dst *time.Time) bool {
	start := p.i
	if _, ok := p.rawString(); !ok {
		return false
	}
	return dst.UnmarshalJSON(p.b[start:p.i]) == nil
}

// digits reads an integer in JSON's grammar with no fraction or exponent.
func (p *jsonParser) digits(neg bool) (uint64, bool) {
	start := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	d := p.b[start:p.i]
	if len(d) == 0 || (len(d) > 1 && d[0] == '0') || p.i < len(p.b) && (p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		return 0, false
	}
	if neg && len(d) == 1 && d[0] == '0' {
		return 0, false // "-0": rare, and encoding/json's business
	}
	var n uint64
	for _, c := range d {
		if n > (math.MaxUint64-9)/10 {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}

func (p *jsonParser) uint(dst *uint64) bool {
	n, ok := p.digits(false)
	*dst = n
	return ok
}

func (p *jsonParser) int(dst *int) bool {
	neg := p.byte('-')
	n, ok := p.digits(neg)
	if !ok || n > math.MaxInt32 { // beyond any pid or uid: leave it to encoding/json
		return false
	}
	*dst = int(n)
	if neg {
		*dst = -*dst
	}
	return true
}

func (p *jsonParser) bool(dst *bool) bool {
	for _, lit := range [...]string{"true", "false"} {
		if len(p.b)-p.i >= len(lit) && string(p.b[p.i:p.i+len(lit)]) == lit {
			p.i += len(lit)
			*dst = lit == "true"
			return true
		}
	}
	return false
}

func (p *jsonParser) strings(dst *[]string) bool {
	if !p.byte('[') {
		return false
	}
	if !p.check {
		*dst = []string{}
	}
	if p.byte(']') {
		return true
	}
	for {
		var s string
		if !p.str(&s) {
			return false
		}
		if !p.check {
			*dst = append(*dst, s)
		}
		if p.byte(']') {
			return true
		}
		if !p.byte(',') {
			return false
		}
	}
}

func (p *jsonParser) stringMap(dst *map[string]string) bool {
	var m map[string]string
	if !p.check {
		m = map[string]string{}
		*dst = m
	}
	return p.object(func(k []byte) (uint32, bool) {
		var v string
		ok := p.str(&v)
		if m != nil {
			m[string(k)] = v
		}
		return 0, ok
	})
}

func (p *jsonParser) process(dst **Process) bool {
	pr := &Process{}
	*dst = pr
	return p.object(func(k []byte) (uint32, bool) {
		switch string(k) {
		case "pid":
			return 1 << 0, p.int(&pr.PID)
		case "start":
			return 1 << 1, p.tm(&pr.Start)
		case "start_ticks":
			return 1 << 2, p.uint(&pr.StartTicks)
		case "exe":
			return 1 << 3, p.str(&pr.Exe)
		case "exe_sha256":
			return 1 << 4, p.str(&pr.ExeSHA256)
		case "signer":
			return 1 << 5, p.str(&pr.Signer)
		case "uid":
			return 1 << 6, p.int(&pr.UID)
		case "ppid":
			return 1 << 7, p.int(&pr.PPID)
		case "parent_start":
			return 1 << 8, p.tm(&pr.ParentStart)
		}
		return 0, false
	})
}

func (p *jsonParser) event(e *Event) bool {
	return p.object(func(k []byte) (uint32, bool) {
		switch string(k) {
		case "seq":
			// Not in a stored event: a reader sets it.
			return 1 << 0, !p.check && p.uint(&e.Seq)
		case "type":
			return 1 << 1, p.str((*string)(&e.Type))
		case "time":
			return 1 << 2, p.tm(&e.Time)
		case "boot_id":
			return 1 << 3, p.str(&e.BootID)
		case "prev_boot_id":
			return 1 << 4, p.str(&e.PrevBootID)
		case "vault_epoch":
			return 1 << 5, p.uint(&e.VaultEpoch)
		case "run":
			return 1 << 6, p.str(&e.Run)
		case "grant":
			return 1 << 7, p.str(&e.Grant)
		case "card":
			return 1 << 8, p.str(&e.Card)
		case "reason":
			return 1 << 9, p.str((*string)(&e.Reason))
		case "key":
			return 1 << 10, p.str(&e.Key)
		case "dest":
			return 1 << 11, p.str(&e.Dest)
		case "dest_names":
			return 1 << 12, p.strings(&e.DestNames)
		case "forwarding":
			return 1 << 13, p.bool(&e.Forwarding)
		case "mode":
			return 1 << 14, p.str((*string)(&e.Mode))
		case "approver":
			return 1 << 15, p.str(&e.Approver)
		case "label":
			return 1 << 16, p.str(&e.Label)
		case "process":
			return 1 << 17, p.process(&e.Process)
		case "detail":
			return 1 << 18, p.stringMap(&e.Detail)
		}
		return 0, false
	})
}
