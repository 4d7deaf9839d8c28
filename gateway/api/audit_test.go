package api

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/postern/postern/audit"
)

// encodeAuditEvents writes events as the gateway does, back to back
// with commas between.
func encodeAuditEvents(t testing.TB, evs ...AuditEvent) []byte {
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

// auditLine is the response line of OpAuditRead holding events.
func auditLine(events []byte, end bool) []byte {
	return append(append([]byte(`{"result":`), AppendAuditBatch(nil, events, end)...), '}')
}

// TestDecodeAuditLine: a response line of OpAuditRead decodes to the same
// events whether it takes the direct path or encoding/json (an event with
// escapes, a line cut short, an error), and the direct path takes only
// lines it reads whole.
func TestDecodeAuditLine(t *testing.T) {
	at := time.Date(2026, 11, 30, 1, 2, 3, 4, time.UTC)
	plain := AuditEvent{Seq: 7, Type: "sign", Time: at, Run: "R1", Detail: map[string]string{"pid": "12"}}
	escaped := AuditEvent{Seq: 8, Type: "bastion_command_started", Time: at, Detail: map[string]string{"command": "make && make install <x>"}}
	encode := func(evs ...AuditEvent) []byte { return encodeAuditEvents(t, evs...) }
	line := auditLine
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

// FuzzDecodeAuditLine holds the direct reading of an audit.read line to
// encoding/json's: a line the direct path takes gives the events and end
// the response decoded as usual gives.
func FuzzDecodeAuditLine(f *testing.F) {
	at := time.Date(2026, 11, 30, 14, 23, 6, 123456789, time.UTC)
	plain := encodeAuditEvents(f,
		AuditEvent{Seq: 1, Type: audit.EventSign, Time: at, Run: "R1", Key: "SHA256:k", DestNames: []string{"db-1"}, Detail: map[string]string{"a": "b"}},
		AuditEvent{Seq: 2, Type: audit.EventSessionApproved, Time: at.In(time.FixedZone("", 3600)), Process: &audit.Process{PID: 7, Exe: "/usr/bin/ssh"}})
	escaped := encodeAuditEvents(f, AuditEvent{Seq: 3, Type: audit.EventSign, Time: at, Label: "é \u2028 \"x\""})
	f.Add(auditLine(plain, false))
	f.Add(auditLine(plain, true))
	f.Add(auditLine(append(append(plain, ','), escaped...), false))
	f.Add(auditLine(nil, true))
	f.Add([]byte(`{"result":{"events":[{"seq":1,"type":"sign","time":"2026-11-30T14:23:06Z"},]}}`))
	f.Add([]byte(`{"result":{"events":[{"seq":1,"type":"sign","time":"2026-11-30T14:23:06Z"}],"end":true,"end":false}}`))
	f.Add([]byte(`{"error":{"code":"locked","message":"x"}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		fast, fastEnd, ok := decodeAuditLine(line, nil)
		if !ok {
			return
		}
		result, err := decodeResponse(line)
		if err != nil {
			t.Fatalf("%s read directly, but as JSON: %v", line, err)
		}
		slow, slowEnd, err := decodeAuditBatch(result)
		if err != nil {
			t.Fatalf("%s read directly, but its events as JSON: %v", line, err)
		}
		if fastEnd != slowEnd || len(fast) != len(slow) || (len(fast) > 0 && !reflect.DeepEqual(fast, slow)) {
			t.Fatalf("%s read directly as\n%#v (end %v)\nas JSON as\n%#v (end %v)", line, fast, fastEnd, slow, slowEnd)
		}
	})
}
