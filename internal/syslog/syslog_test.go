package syslog

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/postern/postern/internal/syslog/syslogtest"
)

func TestFormat(t *testing.T) {
	h := Header{Facility: AuthPriv, Hostname: "host one", AppName: "postern", ProcID: "42"}
	at := time.Date(2026, 11, 30, 10, 0, 0, 123456789, time.FixedZone("x", 3600))
	m := Message{Time: at, Severity: Notice, MsgID: "action_denied", Text: "line one\nline two",
		Data: []Element{{ID: "postern@32473", Params: [][2]string{{"key", `SHA256:a"b\c]d`}, {"bad=name", "é"}}}}}
	want := "<85>1 2026-11-30T09:00:00.123456Z hostone postern 42 action_denied [postern@32473 key=\"SHA256:a\\\"b\\\\c\\]d\" bad_name=\"é\"] \ufeffline one line two"
	if got := string(Format(h, m)); got != want {
		t.Fatalf("Format:\n got %q\nwant %q", got, want)
	}
	// Empty fields are "-", long ones cut, and so is the text.
	got := string(Format(Header{}, Message{Time: at, Severity: Info, MsgID: strings.Repeat("m", 40), Text: strings.Repeat("é", MaxText)}))
	if !strings.HasPrefix(got, "<6>1 2026-11-30T09:00:00.123456Z - - - "+strings.Repeat("m", 32)+" - \ufeff") || len(got) > 100+MaxText || !strings.HasSuffix(got, "…") {
		t.Fatalf("Format of empty and long fields: %q…", got[:80])
	}
}

func TestParseFacility(t *testing.T) {
	for in, want := range map[string]Facility{"auth": 4, "authpriv": 10, "local0": 16, "local7": 23} {
		if f, err := ParseFacility(in); err != nil || f != want {
			t.Errorf("ParseFacility(%q) = %d, %v", in, f, err)
		}
	}
	for _, in := range []string{"", "local8", "kern", "user"} {
		if _, err := ParseFacility(in); err == nil {
			t.Errorf("ParseFacility(%q) accepted", in)
		}
	}
	for _, a := range []string{"udp:nohost", "tcp:", "unix:relative", "smtp:x:1"} {
		if _, _, _, err := ParseAddress(a); err == nil {
			t.Errorf("ParseAddress(%q) accepted", a)
		}
	}
}

// A real rsyslogd parses what every transport sends as RFC 5424: the
// priority, the version, the time, the header fields, the structured
// data and the message come out as they went in.
func TestRsyslogParses(t *testing.T) {
	d := syslogtest.Start(t)
	at := time.Date(2026, 11, 30, 10, 0, 0, 123456000, time.UTC)
	for _, addr := range []string{"unixgram:" + d.Datagram, "unix:" + d.Stream, "udp:" + d.UDP, "tcp:" + d.TCP} {
		w, err := Dial(Config{Address: addr, Facility: AuthPriv, AppName: "postern", Hostname: "testhost"})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			w.Send(Message{Time: at, Severity: Info, MsgID: "sign",
				Data: []Element{{ID: "postern@32473", Params: [][2]string{{"via", addr}, {"n", fmt.Sprint(i)}, {"key", `q"uote]`}}}},
				Text: fmt.Sprintf(`{"type":"sign","n":%d}`, i)})
		}
		w.Close()
		if w.Sent() != 3 || w.Dropped() != 0 {
			t.Fatalf("%s: sent %d, dropped %d, err %v", addr, w.Sent(), w.Dropped(), w.Err())
		}
	}
	lines := d.Wait(t, "12 messages", func(ls []syslogtest.Line) bool { return len(ls) >= 12 })
	for _, l := range lines {
		if l.Pri != "86" || l.Version != "1" || !strings.HasPrefix(l.Time, "2026-11-30T10:00:00.123456") || l.Hostname != "testhost" ||
			l.AppName != "postern" || l.MsgID != "sign" || !strings.Contains(l.Data, `key="q\"uote\]"`) || !strings.HasPrefix(l.Msg, `{"type":"sign","n":`) {
			t.Errorf("rsyslogd parsed %+v", l)
		}
	}
}

// Send never blocks: with no daemon to take them, messages beyond the
// queue are dropped and counted.
func TestSendNeverBlocks(t *testing.T) {
	w, err := Dial(Config{Address: "unixgram:" + t.TempDir() + "/nobody", Queue: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for range 100 {
		w.Send(Message{Severity: Info, MsgID: "x"})
	}
	if w.Dropped() < 90 {
		t.Fatalf("dropped %d", w.Dropped())
	}
	for i := 0; w.Err() == nil; i++ {
		if i == 1000 {
			t.Fatal("no connection error reported")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A stream connection the daemon closed (it restarted, or dropped an
// idle client) takes no message: one written into it would be accepted
// by the kernel and lost, counted as sent. The writer connects again and
// every message sent after the restart reaches the daemon.
func TestStreamClosedByTheDaemonLosesNoMessage(t *testing.T) {
	d := syslogtest.Start(t)
	for _, addr := range []string{"tcp:" + d.TCP, "unix:" + d.Stream} {
		w, err := Dial(Config{Address: addr, Facility: AuthPriv, AppName: "postern", Hostname: "testhost"})
		if err != nil {
			t.Fatal(err)
		}
		send := func(n string) {
			w.Send(Message{Severity: Info, MsgID: "sign", Text: addr + " " + n})
		}
		got := func(n string) func([]syslogtest.Line) bool {
			return func(ls []syslogtest.Line) bool {
				for _, l := range ls {
					if l.Msg == addr+" "+n {
						return true
					}
				}
				return false
			}
		}
		send("before")
		d.Wait(t, addr+": the message before the restart", got("before"))
		d.Restart(t)
		send("after")
		d.Wait(t, addr+": the message sent after the restart", got("after"))
		w.Close()
	}
}

// A message sent once the writer is closed (an event whose record was
// durable only as the gateway stopped) is dropped and counted, not a
// send on a closed queue that ends the gateway.
func TestSendAfterCloseIsDropped(t *testing.T) {
	w, err := Dial(Config{Address: "unixgram:" + t.TempDir() + "/nobody"})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("Send after Close: panic: %v", r)
		}
	}()
	if w.Send(Message{Severity: Info, MsgID: "x"}) || w.Dropped() != 1 {
		t.Fatalf("Send after Close: queued, dropped %d", w.Dropped())
	}
}

// Messages the writer could not send before it closed, the daemon gone,
// are counted as dropped, not lost without a word.
func TestUnsentAtCloseAreCounted(t *testing.T) {
	w, err := Dial(Config{Address: "unixgram:" + t.TempDir() + "/nobody"})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if !w.Send(Message{Severity: Info, MsgID: "x"}) {
			t.Fatal("a message was not queued")
		}
	}
	w.Close()
	if w.Sent() != 0 || w.Dropped() != 3 {
		t.Fatalf("closed with the daemon gone: sent %d, dropped %d, want 0 and 3", w.Sent(), w.Dropped())
	}
}
