package api

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// TestDecodeAuditLine: a response line of OpAuditRead decodes to the same
// events whether it takes the direct path or encoding/json (an event with
// escapes, a line cut short, an error), and the direct path takes only
// lines it reads whole.
func TestDecodeAuditLine(t *testing.T) {
	at := time.Date(2026, 11, 30, 1, 2, 3, 4, time.UTC)
	plain := AuditEvent{Seq: 7, Type: "sign", Time: at, Run: "R1", Detail: map[string]string{"pid": "12"}}
	escaped := AuditEvent{Seq: 8, Type: "bastion_command_started", Time: at, Detail: map[string]string{"command": "make && make install <x>"}}
	encode := func(evs ...AuditEvent) []byte {
		var b []byte
		for i := range evs {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = AppendAuditEventJSON(b, &evs[i]); err != nil {
				t.Fatal(err)
			}
		}
		return b
	}
	line := func(events []byte, end bool) []byte {
		return append(append([]byte(`{"result":`), AppendAuditBatch(nil, events, end)...), '}')
	}
	for _, c := range []struct {
		name   string
		line   []byte
		direct bool
		want   []AuditEvent
		end    bool
	}{
		{"plain", line(encode(plain, plain), false), true, []AuditEvent{plain, plain}, false},
		{"last", line(encode(plain), true), true, []AuditEvent{plain}, true},
		{"empty last", line(nil, true), true, nil, true},
		{"escapes", line(encode(plain, escaped), false), false, []AuditEvent{plain, escaped}, false},
	} {
		evs, end, ok := decodeAuditLine(c.line, nil)
		if ok != c.direct {
			t.Errorf("%s: direct path %v, want %v", c.name, ok, c.direct)
		}
		if !ok {
			result, err := decodeResponse(c.line)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if evs, end, err = decodeAuditBatch(result); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
		}
		var want []AuditEvent
		for _, e := range c.want {
			js, _ := json.Marshal(e)
			var d AuditEvent
			json.Unmarshal(js, &d)
			want = append(want, d)
		}
		if len(evs) != len(want) || (len(want) > 0 && !reflect.DeepEqual(evs, want)) || end != c.end {
			t.Errorf("%s: got %+v end %v, want %+v end %v", c.name, evs, end, want, c.end)
		}
	}
	// cut short, or an error: not the direct path, and an error or a code
	full := line(encode(plain, plain), true)
	for n := len(`{"result":{"events":[`); n < len(full); n++ {
		if _, _, ok := decodeAuditLine(full[:n], nil); ok {
			t.Fatalf("a line cut to %d of %d bytes read as whole", n, len(full))
		}
	}
	if _, err := decodeResponse([]byte(`{"error":"the vault is locked","code":"locked"}`)); !HasCode(err, CodeLocked) {
		t.Fatalf("an error line: %v", err)
	}
}
