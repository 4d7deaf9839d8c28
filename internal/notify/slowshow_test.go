package notify_test

import (
	"context"
	"testing"
	"time"

	dbus "github.com/godbus/dbus/v5"

	"github.com/postern/postern/internal/notify"
)

// slowServer answers what it can do at once, and holds each Notify
// until released: a service that hangs showing, or a program that took
// the name to slow the gateway down.
type slowServer struct {
	called, release chan struct{}
}

func (s *slowServer) GetCapabilities() ([]string, *dbus.Error) {
	return []string{"actions", "body-markup"}, nil
}

func (s *slowServer) GetServerInformation() (string, string, string, string, *dbus.Error) {
	return "slow", "test", "1", "1.2", nil
}

func (s *slowServer) Notify(app string, replaces uint32, icon, summary, body string, actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	s.called <- struct{}{}
	<-s.release
	return 1, nil
}

func (s *slowServer) CloseNotification(id uint32) *dbus.Error { return nil }

// A notification the service is slow to show holds nothing else: while
// its Notify call waits, the service's status (what the gateway asks
// for each card when no console is attached, and for postern status) is
// found.
func TestSlowShowHoldsNoStatus(t *testing.T) {
	srv := &slowServer{called: make(chan struct{}, 1), release: make(chan struct{})}
	addr := serveOnBus(t, srv)
	s := notify.New(addr, nil)
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	shown := make(chan error, 1)
	go func() {
		_, err := s.Show(ctx, notify.Note{App: "postern", Summary: "postern: card C1", Body: "Allow?"}, func(notify.Invoked) {})
		shown <- err
	}()
	select {
	case <-srv.called:
	case <-time.After(30 * time.Second):
		t.Fatal("the notification never reached the service")
	}
	status := make(chan error, 1)
	go func() { _, err := s.Status(); status <- err }()
	select {
	case err := <-status:
		if err != nil {
			t.Errorf("status while a notification is being shown: %v", err)
		}
		select {
		case err := <-shown:
			t.Errorf("the notification's call ended (%v) before the status was found: the status waited for it", err)
		default:
		}
	case err := <-shown:
		t.Errorf("the status waited for the service to show a notification, until the gateway gave up on it (%v)", err)
		<-status
		shown <- err
	}
	close(srv.release)
	<-shown
}
