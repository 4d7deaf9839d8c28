package journal

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// sampleEntries are entries in each state, as the journal stores them.
func sampleEntries() []*Entry {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 123456789, time.UTC)
	base := func(id string, cmd []byte) *Entry {
		return &Entry{
			ID: id, Instance: "01M8N7K5YANAXYX35XDKKVHY1R", BootID: "b0", Run: "r1", Conn: "c1",
			Requester: "ssh (4121) ← bash ← claude (3988)", RequesterPID: 4121,
			Target: Target{User: "deploy", Host: "prod-db-1", Port: 22, HostKey: "SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8"},
			Kind:   KindExec, Command: cmd, CommandSHA256: CommandHash(cmd),
			Approval: "card 01M8… approved once", Started: t0,
		}
	}
	running := base("01M8N7K5YANAXYX35XDKKVHY1R", []byte("systemctl restart app"))
	running.PTY = true

	ended := base("01M8N7K5YBNAXYX35XDKKVHY1R", []byte("printf '\\377' | od -c\n\x00\xfe$HOME `x`"))
	ended.Dispatched = t0.Add(time.Millisecond)
	ended.End = &End{At: t0.Add(time.Second), Outcome: OutcomeSignaled, Signal: "TERM", CoreDumped: true,
		ErrorMsg: "killed", BytesIn: 1, BytesOut: 2, BytesErr: 3, OutputTail: []byte{0, 1, 0xff, '\n'}, ClientGone: true}

	unknown := base("01M8N7K5YCNAXYX35XDKKVHY1R", []byte("make deploy"))
	unknown.Marker = true
	unknown.RetriedBy = "01M8N7K5YDNAXYX35XDKKVHY1R"
	unknown.Unknown = &Unknown{At: t0.Add(2 * time.Second), Reason: ReasonUpstreamLost, Detail: "EOF", LastPhase: PhaseIntent}
	status := 3
	unknown.Resolutions = []Resolution{
		{At: t0.Add(time.Minute), By: ByProbe, Result: ResultStillRunning, Evidence: "postern-probe 1 …\nlock=held"},
		{At: t0.Add(time.Hour), By: ByProbe, Result: ResultRan, ExitStatus: &status, Evidence: "exit.status=3"},
	}

	retry := base("01M8N7K5YDNAXYX35XDKKVHY1R", []byte("make deploy"))
	retry.RetryOf = unknown.ID
	retry.Kind = KindSubsystem
	retry.Command = []byte("sftp")
	retry.CommandSHA256 = CommandHash(retry.Command)
	retry.End = &End{At: t0.Add(3 * time.Hour), Outcome: OutcomeRejected}

	shell := base("01M8N7K5YENAXYX35XDKKVHY1R", nil)
	shell.Kind = KindShell
	shell.Target = Target{User: "u", Host: "::1", Port: 2222}
	return []*Entry{running, ended, unknown, retry, shell}
}

func TestEncodeRoundTrip(t *testing.T) {
	for _, e := range sampleEntries() {
		b, err := EncodeEntry(e)
		if err != nil {
			t.Fatal(err)
		}
		if b[0] != recordVersion {
			t.Fatalf("record starts with %#x", b[0])
		}
		d, err := DecodeEntry(b)
		if err != nil {
			t.Fatalf("%s: %v", e.ID, err)
		}
		b2, _ := EncodeEntry(d)
		if !bytes.Equal(b, b2) || !bytes.Equal(d.Command, e.Command) {
			t.Fatalf("%s does not round-trip:\n%s\n%s", e.ID, b, b2)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	good, _ := EncodeEntry(sampleEntries()[1])
	body := string(good[1:])
	cases := map[string][]byte{
		"empty":          nil,
		"no version":     good[1:],
		"version 2":      append([]byte{2}, good[1:]...),
		"trailing":       append(append([]byte{}, good...), " {}"...),
		"unknown field":  []byte("\x01" + strings.Replace(body, `"id"`, `"status":"COMPLETED","id"`, 1)),
		"hash mismatch":  []byte("\x01" + strings.Replace(body, `"kind":"exec","command":"`, `"kind":"exec","command":"AA`, 1)),
		"bad kind":       []byte("\x01" + strings.Replace(body, `"kind":"exec"`, `"kind":"x11"`, 1)),
		"bad outcome":    []byte("\x01" + strings.Replace(body, `"outcome":"signaled"`, `"outcome":"fine"`, 1)),
		"not json":       []byte("\x01garbage"),
		"json array":     []byte("\x01[]"),
		"null":           []byte("\x01null"),
		"too large":      append([]byte{1}, make([]byte, MaxRecord)...),
		"end and unkown": []byte("\x01" + strings.Replace(body, `"end":{`, `"unknown":{"at":"2026-03-01T10:00:00Z","reason":"upstream_lost","last_phase":"intent"},"end":{`, 1)),
	}
	for name, b := range cases {
		if e, err := DecodeEntry(b); err == nil {
			t.Errorf("%s: decoded %+v", name, e)
		}
	}
	if _, err := DecodeEntry(append([]byte{2}, good[1:]...)); err == nil || !strings.Contains(err.Error(), "upgrade postern") {
		t.Errorf("a newer version: %v", err)
	}
}

func TestEntryJSON(t *testing.T) {
	s := sampleEntries()
	out, err := json.Marshal(s[0])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(out, &m)
	if m["status"] != StatusRunning || m["command_text"] != "systemctl restart app" || m["command"] != "c3lzdGVtY3RsIHJlc3RhcnQgYXBw" {
		t.Fatalf("JSON: %s", out)
	}
	if _, ok := m["dispatched"]; ok {
		t.Errorf("zero dispatch time in JSON: %s", out)
	}
	out, _ = json.Marshal(*s[1]) // a value works too
	m = nil
	json.Unmarshal(out, &m)
	if m["status"] != StatusCompleted {
		t.Fatalf("JSON: %s", out)
	}
	if _, ok := m["command_text"]; ok {
		t.Errorf("command_text for a non-UTF-8 command: %s", out)
	}
	// The command line reads it back with encoding/json.
	var back Entry
	if err := json.Unmarshal(out, &back); err != nil || !bytes.Equal(back.Command, s[1].Command) || back.Status() != StatusCompleted {
		t.Fatalf("read back: %v %+v", err, back)
	}
}

func FuzzDecodeEntry(f *testing.F) {
	for _, e := range sampleEntries() {
		b, err := EncodeEntry(e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{1})
	f.Add([]byte("\x01{}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := DecodeEntry(b)
		if err != nil {
			return
		}
		// Whatever decodes is a valid entry: it encodes, decodes again to
		// the same record, and has a status.
		b1, err := EncodeEntry(e)
		if err != nil {
			t.Fatalf("decoded entry does not encode: %v", err)
		}
		e2, err := DecodeEntry(b1)
		if err != nil {
			t.Fatalf("re-encoded entry does not decode: %v\n%s", err, b1)
		}
		b2, _ := EncodeEntry(e2)
		if !bytes.Equal(b1, b2) {
			t.Fatalf("unstable encoding:\n%s\n%s", b1, b2)
		}
		switch e.Status() {
		case StatusRunning, StatusCompleted, StatusRetrySafe, StatusUnknown:
		default:
			t.Fatalf("status %q", e.Status())
		}
		_ = e.Describe()
		_ = e.CommandText()
		if _, err := json.Marshal(e); err != nil {
			t.Fatal(err)
		}
	})
}

// The largest entry the journal can make fits in a record.
func TestLargestEntryEncodes(t *testing.T) {
	text := strings.Repeat("\x01", MaxText)
	e := sampleEntries()[2]
	e.Command = bytes.Repeat([]byte{0xff}, MaxCommand)
	e.CommandSHA256 = CommandHash(e.Command)
	e.BootID, e.Run, e.Conn, e.Requester, e.Approval = text, text, text, text, text
	e.Target.User, e.Target.Host, e.Target.HostKey = text, text, text
	e.Unknown.Detail = text
	e.Resolutions = nil
	for range MaxResolutions {
		e.Resolutions = append(e.Resolutions, Resolution{At: e.Started, By: ByUser, Result: ResultInconclusive, Evidence: strings.Repeat("\x02", MaxEvidence)})
	}
	b, err := EncodeEntry(e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeEntry(b); err != nil {
		t.Fatal(err)
	}
	t.Logf("largest record: %d bytes of %d", len(b), MaxRecord)
}
