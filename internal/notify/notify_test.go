package notify_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dbus "github.com/godbus/dbus/v5"

	"github.com/postern/postern/internal/notify"
	"github.com/postern/postern/internal/notify/notifytest"
	"github.com/postern/postern/internal/sessionbus"
)

func show(t *testing.T, s *notify.Service) (<-chan notify.Invoked, <-chan struct{}, context.CancelFunc) {
	t.Helper()
	got := make(chan notify.Invoked, 4)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	closed, err := s.Show(ctx, notify.Note{
		App: "postern", Summary: "postern: card C1", Body: "Allow <b>x</b> & y?",
		Actions: []notify.Action{{Key: "approve-once", Label: "Approve once"}, {Key: "deny", Label: "Deny"}},
		Timeout: time.Minute, Critical: true,
	}, func(inv notify.Invoked) { got <- inv })
	if err != nil {
		t.Fatal(err)
	}
	return got, closed, cancel
}

// A real notification daemon (dunst under Xvfb) shows the notification;
// a click invokes the action, reported with the daemon's own process.
func TestActionFromTheDaemon(t *testing.T) {
	d := notifytest.Start(t, "approve-once")
	s := notify.New(d.Bus, nil)
	defer s.Close()
	st, err := s.Status()
	if err != nil {
		t.Fatal(err)
	}
	if !st.Actions() || st.PID != d.Dunst.Process.Pid {
		t.Fatalf("status %+v (dunst is pid %d)", st, d.Dunst.Process.Pid)
	}
	got, closed, _ := show(t, s)
	d.WaitDisplayed(1, 10*time.Second)
	d.Click()
	select {
	case inv := <-got:
		if inv.Action != "approve-once" || inv.PID != d.Dunst.Process.Pid || inv.Sender != st.Owner {
			t.Fatalf("invoked %+v, want approve-once from dunst (pid %d, %s)", inv, d.Dunst.Process.Pid, st.Owner)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the click reported no action")
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the notification was not reported closed")
	}
}

// Another program on the bus that emits ActionInvoked itself is not the
// notification service: its signal is ignored.
func TestActionFromAnotherSenderIgnored(t *testing.T) {
	d := notifytest.Start(t, "deny")
	s := notify.New(d.Bus, nil)
	defer s.Close()
	got, _, _ := show(t, s)
	d.WaitDisplayed(1, 10*time.Second)
	for id := 1; id <= 5; id++ {
		cmd := exec.Command("dbus-send", "--bus="+d.Bus, "--type=signal", "/org/freedesktop/Notifications",
			"org.freedesktop.Notifications.ActionInvoked", "uint32:"+strconv.Itoa(id), "string:approve-once")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("dbus-send: %v %s", err, out)
		}
	}
	select {
	case inv := <-got:
		t.Fatalf("a forged signal was taken as an action: %+v", inv)
	case <-time.After(500 * time.Millisecond):
	}
	d.Click()
	select {
	case inv := <-got:
		if inv.Action != "deny" {
			t.Fatalf("invoked %+v, want deny", inv)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the click reported no action")
	}
}

// Withdrawing a notification closes it on the daemon.
func TestWithdraw(t *testing.T) {
	d := notifytest.Start(t, "deny")
	s := notify.New(d.Bus, nil)
	defer s.Close()
	_, _, cancel := show(t, s)
	d.WaitDisplayed(1, 10*time.Second)
	cancel()
	d.WaitDisplayed(0, 10*time.Second)
}

// Without a bus, or with nobody owning the service, Status says so.
func TestNoService(t *testing.T) {
	if _, err := notify.New("", nil).Status(); !errors.Is(err, sessionbus.ErrNoBus) {
		t.Fatalf("no bus: %v", err)
	}
}

// A program on the bus that floods the service's connection with forged
// actions, sent to every listener or to that connection alone, makes it
// hold no goroutine for each and fills no log: each is dropped as it
// comes, and the person's click, sent in the flood's wake, still comes
// through, before the notification's close.
func TestForgedActionFloodDropped(t *testing.T) {
	d := notifytest.Start(t, "approve-once")
	var warned atomic.Int64
	s := notify.New(d.Bus, slog.New(countHandler{&warned}))
	defer s.Close()
	got, _, _ := show(t, s)
	d.WaitDisplayed(1, 10*time.Second)
	flood, err := dbus.Connect(d.Bus)
	if err != nil {
		t.Fatal(err)
	}
	defer flood.Close()
	target := ourOtherConnection(t, flood)
	base := runtime.NumGoroutine()
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			if n := int64(runtime.NumGoroutine()); n > peak.Load() {
				peak.Store(n)
			}
		}
	}()
	const forged = 20000
	for i := range forged {
		// dunst numbers its notifications from 1 up: the one shown has
		// one of the first few ids.
		id := uint32(1 + i%4)
		if i%2 == 0 {
			if err := flood.Emit("/org/freedesktop/Notifications", "org.freedesktop.Notifications.ActionInvoked", id, "approve-once"); err != nil {
				t.Fatal(err)
			}
			continue
		}
		msg := &dbus.Message{Type: dbus.TypeSignal, Headers: map[dbus.HeaderField]dbus.Variant{
			dbus.FieldPath:        dbus.MakeVariant(dbus.ObjectPath("/org/freedesktop/Notifications")),
			dbus.FieldInterface:   dbus.MakeVariant("org.freedesktop.Notifications"),
			dbus.FieldMember:      dbus.MakeVariant("ActionInvoked"),
			dbus.FieldDestination: dbus.MakeVariant(target),
			dbus.FieldSignature:   dbus.MakeVariant(dbus.SignatureOf(id, "")),
		}, Body: []any{id, "approve-once"}}
		if call := flood.Send(msg, nil); call != nil && call.Err != nil {
			t.Fatal(call.Err)
		}
	}
	d.Click()
	select {
	case inv := <-got:
		if inv.PID != d.Dunst.Process.Pid {
			t.Fatalf("invoked %+v, want the click from dunst (pid %d)", inv, d.Dunst.Process.Pid)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the click reported no action within 10s of the flood (%d warnings, %d displayed)", warned.Load(), d.Displayed())
	}
	close(stop)
	<-sampled
	if grew := peak.Load() - int64(base); grew > forged/10 {
		t.Errorf("%d forged actions made the connection's process hold %d more goroutines", forged, grew)
	}
	if n := warned.Load(); n > 10 {
		t.Errorf("%d forged actions logged %d warnings", forged, n)
	}
}

// ourOtherConnection returns the unique name of this process's connection
// to the bus other than c's (the service's).
func ourOtherConnection(t *testing.T, c *dbus.Conn) string {
	t.Helper()
	var names []string
	if err := c.BusObject().Call("org.freedesktop.DBus.ListNames", 0).Store(&names); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !strings.HasPrefix(n, ":") || n == c.Names()[0] {
			continue
		}
		var pid uint32
		if c.BusObject().Call("org.freedesktop.DBus.GetConnectionUnixProcessID", 0, n).Store(&pid) == nil && int(pid) == os.Getpid() {
			return n
		}
	}
	t.Fatal("no other connection of this process on the bus")
	return ""
}

// countHandler counts the warnings logged.
type countHandler struct{ n *atomic.Int64 }

func (h countHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h countHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h.n.Add(1)
	}
	return nil
}
func (h countHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h countHandler) WithGroup(string) slog.Handler      { return h }

// A bus that takes the connection and never answers (a stopped daemon,
// or a program that took its socket), or answers the handshake and
// nothing after it, holds no caller: asking whether the service is
// there, as each card does, ends with an error.
func TestBusThatNeverAnswers(t *testing.T) {
	for _, greet := range []bool{false, true} {
		sock := t.TempDir() + "/bus"
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				t.Cleanup(func() { c.Close() })
				if greet {
					go greetAndFallSilent(c)
				}
			}
		}()
		s := notify.New("unix:path="+sock, nil)
		for range 2 {
			done := make(chan error, 1)
			go func() { _, err := s.Status(); done <- err }()
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("a bus that never answers was found")
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("asking a bus that never answers (after its handshake: %v) had no end in 20s", greet)
			}
		}
		s.Close()
	}
}

// greetAndFallSilent plays a bus daemon on c until the client has said
// Hello, and answers nothing after.
func greetAndFallSilent(c net.Conn) {
	in := bufio.NewReader(c)
	line := func() string { l, _ := in.ReadString('\n'); return l }
	in.ReadByte() // the client's NUL byte
	line()        // AUTH
	io.WriteString(c, "REJECTED EXTERNAL\r\n")
	line() // AUTH EXTERNAL …
	io.WriteString(c, "OK 0123456789abcdef0123456789abcdef\r\n")
	line() // BEGIN
	hello, err := dbus.DecodeMessage(in)
	if err != nil {
		return
	}
	reply := &dbus.Message{Type: dbus.TypeMethodReply, Headers: map[dbus.HeaderField]dbus.Variant{
		dbus.FieldReplySerial: dbus.MakeVariant(hello.Serial()),
		dbus.FieldSender:      dbus.MakeVariant("org.freedesktop.DBus"),
		dbus.FieldDestination: dbus.MakeVariant(":1.1"),
		dbus.FieldSignature:   dbus.MakeVariant(dbus.SignatureOf("")),
	}, Body: []any{":1.1"}}
	reply.EncodeTo(c, binary.LittleEndian)
	io.Copy(io.Discard, in)
}

// A notification's timeout travels in milliseconds in 32 bits: a card
// that waits longer than that (card_timeout has no bound) asks for the
// longest timeout there is, not for a number wrapped negative, which
// services read as their own short default.
func TestLongTimeoutDoesNotWrap(t *testing.T) {
	d := notifytest.Start(t, "deny")
	calls := d.NotifyCalls()
	s := notify.New(d.Bus, nil)
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := s.Show(ctx, notify.Note{App: "postern", Summary: "postern: card C1", Body: "b", Timeout: 30 * 24 * time.Hour}, func(notify.Invoked) {}); err != nil {
		t.Fatal(err)
	}
	var got string
	for deadline := time.Now().Add(10 * time.Second); got == ""; time.Sleep(10 * time.Millisecond) {
		b := calls()
		if i := strings.LastIndex(b, "int32 "); i >= 0 {
			got = strings.Fields(b[i+len("int32 "):])[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Notify call seen:\n%s", b)
		}
	}
	if got != strconv.Itoa(math.MaxInt32) {
		t.Fatalf("a 30-day card asked for a timeout of %s ms, want %d", got, math.MaxInt32)
	}
}
