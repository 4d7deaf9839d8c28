package gateway

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	dbus "github.com/godbus/dbus/v5"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/syncbuf"
)

// slowNotifications is a notification service that takes longer than a
// person's reading time to show a notification, and reports a click on
// Approve once just after it is shown.
type slowNotifications struct{ conn *dbus.Conn }

func (s slowNotifications) GetCapabilities() ([]string, *dbus.Error) {
	return []string{"actions", "body-markup"}, nil
}

func (s slowNotifications) GetServerInformation() (string, string, string, string, *dbus.Error) {
	return "slow", "test", "1", "1.2", nil
}

func (s slowNotifications) Notify(app string, replaces uint32, icon, summary, body string, actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	time.Sleep(2 * approvals.ReadTime)
	go func() {
		time.Sleep(approvals.ReadTime / 4)
		s.conn.Emit("/org/freedesktop/Notifications", "org.freedesktop.Notifications.ActionInvoked", uint32(7), actionOnce)
	}()
	return 7, nil
}

func (s slowNotifications) CloseNotification(id uint32) *dbus.Error { return nil }

// The time a notification must be up before a click on Approve once
// counts starts once the service has shown it, not before the calls that
// show it: a slow service does not shorten it by its own delay.
func TestNotificationReadTimeStartsOnceShown(t *testing.T) {
	dir := gatewayHome(t)
	serveNotifications(t, dir, func(c *dbus.Conn) any { return slowNotifications{c} })
	var log syncbuf.Buffer
	g, _, _ := runGatewayWith(t, dir, Options{Log: slog.New(slog.NewTextHandler(&log, nil))})
	n := newNotifier(g)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	now := time.Now()
	go n.Show(ctx, approvals.CardView{ID: "C1", Mode: audit.ModeSession, Purpose: approvals.PurposeAuth, Created: now, Expires: now.Add(time.Minute),
		Subjects: []approvals.RunView{{ProcessView: approvals.ProcessView{Name: "ssh", PID: 7}}}})
	// Taken, the click answers no card (there is none), and says
	// nothing: the test waits for the refusal until long after it.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(log.String(), "it came before the card could be read"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a click %v after the notification was shown was taken as read:\n%s", approvals.ReadTime/4, log.String())
		}
	}
}
