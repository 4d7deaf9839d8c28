package notify_test

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/postern/postern/internal/notify"
	"github.com/postern/postern/internal/notify/notifytest"
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
	if _, err := notify.New("", nil).Status(); !errors.Is(err, notify.ErrNoBus) {
		t.Fatalf("no bus: %v", err)
	}
	if _, err := notify.Address([]string{"XDG_RUNTIME_DIR=" + t.TempDir()}); !errors.Is(err, notify.ErrNoBus) {
		t.Fatalf("address without a bus: %v", err)
	}
}
