package notify_test

import (
	"context"
	"os"
	"testing"
	"time"

	dbus "github.com/godbus/dbus/v5"

	"github.com/postern/postern/internal/dbustest"
	"github.com/postern/postern/internal/notify"
)

// plainServer is a notification service on the bus with the
// capabilities it names, that keeps the body of each notification.
type plainServer struct {
	caps   []string
	bodies chan string
}

func (s *plainServer) GetCapabilities() ([]string, *dbus.Error) { return s.caps, nil }

func (s *plainServer) GetServerInformation() (string, string, string, string, *dbus.Error) {
	return "plain", "test", "1", "1.2", nil
}

func (s *plainServer) Notify(app string, replaces uint32, icon, summary, body string, actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	s.bodies <- body
	return 1, nil
}

func (s *plainServer) CloseNotification(id uint32) *dbus.Error { return nil }

// A card's text reaches a notification service as the person must read
// it: escaped for the body markup of a service that reads it, as it is
// for one that does not, which would show "&lt;" where the card says "<".
func TestNotificationBodyIsEscapedOnlyForMarkup(t *testing.T) {
	for _, tc := range []struct {
		caps []string
		want string
	}{
		{[]string{"actions", "body-markup"}, "Allow &lt;b&gt;x&lt;/b&gt; &amp; y?"},
		{[]string{"actions"}, "Allow <b>x</b> & y?"},
	} {
		srv := &plainServer{caps: tc.caps, bodies: make(chan string, 1)}
		addr := serveOnBus(t, srv)
		s := notify.New(addr, nil)
		defer s.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if _, err := s.Show(ctx, notify.Note{App: "postern", Summary: "postern: card C1", Body: "Allow <b>x</b> & y?"}, func(notify.Invoked) {}); err != nil {
			t.Fatal(err)
		}
		select {
		case body := <-srv.bodies:
			if body != tc.want {
				t.Errorf("a service with capabilities %v was sent the body %q, want %q", tc.caps, body, tc.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no notification reached the service")
		}
	}
}

// serveOnBus starts a session bus of the test's own and serves srv
// there as the notification service. It returns the bus's address.
func serveOnBus(t *testing.T, srv any) string {
	t.Helper()
	dir := t.TempDir()
	addr := dbustest.Start(t, dir, []string{"PATH=" + os.Getenv("PATH"), "XDG_RUNTIME_DIR=" + dir})
	conn, err := dbus.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.Auth(nil); err != nil {
		t.Fatal(err)
	}
	if err := conn.Hello(); err != nil {
		t.Fatal(err)
	}
	if err := conn.Export(srv, "/org/freedesktop/Notifications", "org.freedesktop.Notifications"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.RequestName("org.freedesktop.Notifications", dbus.NameFlagDoNotQueue); err != nil {
		t.Fatal(err)
	}
	return addr
}
