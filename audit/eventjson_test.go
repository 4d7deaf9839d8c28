package audit

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// jsonSeeds are events as the writer encodes them, and variants that
// encoding/json reads the same way or refuses: escapes, whitespace, keys in
// another case, repeated keys, null, numbers out of range.
func jsonSeeds(t testing.TB) [][]byte {
	at := time.Date(2026, 11, 30, 14, 23, 6, 123456789, time.UTC)
	full := Event{Seq: 42, Type: EventSessionApproved, Time: at, BootID: "B1", PrevBootID: "B0", VaultEpoch: 3,
		Run: "R31", Grant: "G7", Card: "C2", Reason: ReasonSession, Key: "SHA256:k", Dest: "SHA256:d",
		DestNames: []string{"db-1", "db-1.example"}, Forwarding: true, Mode: ModePerCall,
		Approver: "tty:/dev/pts/3", Label: "label é",
		Process: &Process{PID: 4121, Start: at.Add(-time.Hour), StartTicks: 991, Exe: "/usr/bin/ssh", ExeSHA256: "ab12",
			Signer: "s", UID: 1000, PPID: 3988, ParentStart: at.Add(-2 * time.Hour)},
		Detail: map[string]string{"channel": "agent", "pid": "4121"}}
	escaped := full
	escaped.Approver, escaped.Label = "tty:/dev/pts/3 <pid 12> & \"x\"", "label \u2028 é \x01"
	escaped.Detail = map[string]string{"z": "\xff", "\\": "\t"}
	var seeds [][]byte
	for _, e := range []Event{full, {Type: EventSign, Time: at}, {Type: EventCheckpoint, Time: at.In(time.FixedZone("", 3600)), Process: &Process{}}, escaped} {
		js, err := json.Marshal(&e)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, js)
	}
	for _, s := range []string{
		`{"type":"sign","time":"2026-11-30T14:23:06Z","run":"R\u00e91"}`,
		`{"type":"sign", "time":"2026-11-30T14:23:06Z"}`,
		`{"Type":"sign","time":"2026-11-30T14:23:06Z"}`,
		`{"type":"sign","type":"end","time":"2026-11-30T14:23:06Z"}`,
		`{"type":null,"time":"2026-11-30T14:23:06Z","detail":{"a":"1","a":"2"}}`,
		`{"seq":18446744073709551615,"vault_epoch":-1,"time":"2026-11-30T14:23:06Z"}`,
		`{"seq":1.5,"time":"2026-11-30T14:23:06Z","process":{"pid":-7,"uid":99999999999}}`,
		`{"time":"2026-11-30T14:23:06+01:00","dest_names":[],"detail":{},"forwarding":false}`,
		`{"time":"10000-01-01T00:00:00Z"}`,
		`{"time":"2026-11-30T14:23:06Z","unknown":1}`,
		`{"seq":01,"time":"2026-11-30T14:23:06Z"}`,
		`{}`, `{} `, `[]`, `null`, `{"run":"a`,
	} {
		seeds = append(seeds, []byte(s))
	}
	return seeds
}

// FuzzEventJSON holds the event codec to encoding/json: decodeEvent gives
// what json.Unmarshal gives (or fails where it fails), and
// AppendEventJSON writes what json.Marshal writes.
func FuzzEventJSON(f *testing.F) {
	for _, s := range jsonSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, js []byte) {
		var got, want Event
		gerr := decodeEvent(js, &got)
		werr := json.Unmarshal(js, &want)
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("decodeEvent error %v, json.Unmarshal error %v", gerr, werr)
		}
		if werr != nil {
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeEvent gave\n%#v\njson.Unmarshal gave\n%#v", got, want)
		}
		out, gerr := AppendEventJSON([]byte("prefix"), &got)
		wout, werr := json.Marshal(&want)
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("AppendEventJSON error %v, json.Marshal error %v", gerr, werr)
		}
		if werr == nil && !bytes.Equal(out, append([]byte("prefix"), wout...)) {
			t.Fatalf("AppendEventJSON wrote\n%s\njson.Marshal wrote\n%s", out, wout)
		}
		// What storedEventJSON takes has no seq and is passed on with one,
		// which reads as the event with that seq, by encoding/json and by
		// a reader's direct path alike, to its last byte.
		if !storedEventJSON(js) {
			return
		}
		if want.Seq != 0 {
			t.Fatalf("%s: taken for a stored event, which has no seq", js)
		}
		at := appendEventJSONAt(nil, 77, js)
		want.Seq = 77
		var viaJSON, direct Event
		if err := json.Unmarshal(at, &viaJSON); err != nil || !reflect.DeepEqual(viaJSON, want) {
			t.Fatalf("%s passed on as %s, which json.Unmarshal reads as\n%#v (%v), not\n%#v", js, at, viaJSON, err, want)
		}
		if n, ok := DecodeEventPrefix(at, &direct); !ok || n != len(at) || !reflect.DeepEqual(direct, want) {
			t.Fatalf("%s passed on as %s, which the direct path reads (%v, to byte %d of %d) as\n%#v", js, at, ok, n, len(at), direct)
		}
	})
}

// TestDecodeEventFastPath checks that the events the writer encodes take
// the direct path, not encoding/json.
func TestDecodeEventFastPath(t *testing.T) {
	for _, js := range jsonSeeds(t)[:3] {
		var e Event
		p := jsonParser{b: js}
		if !p.event(&e) || p.i != len(js) {
			t.Errorf("%s: not read by the direct path (stopped at byte %d)", js, p.i)
		}
		// As the writer stores it (no seq), it is passed on as it is.
		e.Seq = 0
		stored, err := json.Marshal(&e)
		if err != nil {
			t.Fatal(err)
		}
		if !storedEventJSON(stored) {
			t.Errorf("%s: not taken for an event as the writer stores it", stored)
		}
		if storedEventJSON(js) && e.Seq != 0 {
			t.Errorf("%s: taken for a stored event with its seq", js)
		}
	}
}
