package gateway

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	dbus "github.com/godbus/dbus/v5"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/dbustest"
	"github.com/postern/postern/internal/notify"
)

// stuckNotifications owns the notification service on a bus and never
// answers a call: a service that hangs, or a program that took the name.
// called is closed by the first call.
type stuckNotifications struct {
	release, called chan struct{}
	once            *sync.Once
}

func (s stuckNotifications) GetCapabilities() ([]string, *dbus.Error) {
	s.once.Do(func() { close(s.called) })
	<-s.release
	return nil, nil
}

func (s stuckNotifications) GetServerInformation() (string, string, string, string, *dbus.Error) {
	<-s.release
	return "", "", "", "", nil
}

// serveNotifications starts a session bus for a gateway in dir (it
// names it in DBUS_SESSION_BUS_ADDRESS), and serves there the
// notification service srv makes, on the connection it is given.
func serveNotifications(t *testing.T, dir string, srv func(*dbus.Conn) any) {
	t.Helper()
	bus := dbustest.Start(t, dir, []string{"PATH=" + os.Getenv("PATH"), "XDG_RUNTIME_DIR=" + dir})
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", bus)
	conn, err := dbus.Connect(bus)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.Export(srv(conn), "/org/freedesktop/Notifications", "org.freedesktop.Notifications"); err != nil {
		t.Fatal(err)
	}
	if reply, err := conn.RequestName(notify.ServiceName, dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("owning %s: %v %v", notify.ServiceName, reply, err)
	}
}

// A status request waits for the notification service to say what it
// can do; meanwhile the gateway answers everything else: a run is
// prepared while the status request still waits (it gives up on the
// service after sessionbus.CallTimeout).
func TestSlowNotifierStatus(t *testing.T) {
	dir := gatewayHome(t)
	stuck := stuckNotifications{release: make(chan struct{}), called: make(chan struct{}), once: new(sync.Once)}
	defer close(stuck.release)
	serveNotifications(t, dir, func(*dbus.Conn) any { return stuck })
	_, sock, _ := runGateway(t, dir)
	c := api.NewClient(sock)
	ctx := context.Background()
	status := make(chan error, 1)
	go func() { _, err := c.Status(ctx); status <- err }()
	select {
	case <-stuck.called: // the status request is waiting on the bus
	case <-time.After(30 * time.Second):
		t.Fatal("the status request did not ask the notification service")
	}
	if _, err := c.PrepareRun(ctx, "x"); err != nil {
		t.Fatalf("prepare run: %v", err)
	}
	select {
	case <-status:
		t.Error("the run was prepared only once the status request had given up on the notification service")
	default:
	}
	<-status
}
