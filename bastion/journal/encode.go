package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// recordVersion is the first byte of every record; the JSON entry
// follows. A reader refuses versions it does not know, unknown fields,
// trailing data, records over MaxRecord and entries that break the
// invariants Entry keeps.
const recordVersion = 1

// MaxRecord bounds an encoded entry. The largest entry the journal can
// make (a MaxCommand command, every text field at its limit and made of
// characters JSON escapes six bytes long, MaxResolutions resolutions)
// encodes to less.
const MaxRecord = 4 << 20

// record is Entry without its methods, so that records hold exactly the
// fields (no status, no command text).
type record Entry

// EncodeEntry returns the stored form of e.
func EncodeEntry(e *Entry) ([]byte, error) {
	if err := e.validate(); err != nil {
		return nil, fmt.Errorf("cannot encode journal entry: %v", err)
	}
	var buf bytes.Buffer
	buf.WriteByte(recordVersion)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode((*record)(e)); err != nil {
		return nil, fmt.Errorf("cannot encode journal entry %s: %v", e.ID, err)
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(b) > MaxRecord {
		return nil, fmt.Errorf("journal entry %s encodes to %d bytes, more than %d", e.ID, len(b), MaxRecord)
	}
	return b, nil
}

// DecodeEntry parses a stored record. It never panics, and refuses
// anything EncodeEntry could not have written.
func DecodeEntry(b []byte) (*Entry, error) {
	switch {
	case len(b) == 0:
		return nil, errors.New("empty journal record")
	case len(b) > MaxRecord:
		return nil, fmt.Errorf("journal record of %d bytes is larger than %d", len(b), MaxRecord)
	case b[0] != recordVersion:
		if b[0] > recordVersion && b[0] < '{' {
			return nil, fmt.Errorf("journal record version %d is newer than this postern reads (%d): upgrade postern", b[0], recordVersion)
		}
		return nil, fmt.Errorf("not a journal record (first byte %#02x)", b[0])
	}
	dec := json.NewDecoder(bytes.NewReader(b[1:]))
	dec.DisallowUnknownFields()
	var r record
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("bad journal record: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("bad journal record: data after the entry")
	}
	e := (*Entry)(&r)
	if err := e.validate(); err != nil {
		return nil, fmt.Errorf("bad journal record: %v", err)
	}
	return e, nil
}

// MarshalJSON writes the entry as records hold it, plus "status" (one of
// the Status strings) and, when the command is valid UTF-8,
// "command_text" with the command as text.
func (e Entry) MarshalJSON() ([]byte, error) {
	out := struct {
		*record
		Status      string `json:"status"`
		CommandText string `json:"command_text,omitempty"`
	}{record: (*record)(&e), Status: e.Status()}
	if utf8.Valid(e.Command) {
		out.CommandText = string(e.Command)
	}
	return json.Marshal(out)
}
