package gateway

import (
	"context"
	"os"
	"testing"
	"time"

	dbus "github.com/keybase/dbus"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/dbustest"
	"github.com/postern/postern/internal/notify"
)

// stuckNotifications owns the notification service on a bus and never
// answers a call: a service that hangs, or a program that took the name.
type stuckNotifications struct{ release chan struct{} }

func (s stuckNotifications) GetCapabilities() ([]string, *dbus.Error) {
	<-s.release
	return nil, nil
}

func (s stuckNotifications) GetServerInformation() (string, string, string, string, *dbus.Error) {
	<-s.release
	return "", "", "", "", nil
}

// A status request waits for the notification service to say what it
// can do; meanwhile the gateway answers everything else: a run is
// prepared at once.
func TestSlowNotifierStatus(t *testing.T) {
	dir := gatewayHome(t)
	bus := dbustest.Start(t, dir, os.Environ())
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", bus)
	conn, err := dbus.Connect(bus)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stuck := stuckNotifications{release: make(chan struct{})}
	defer close(stuck.release)
	if err := conn.Export(stuck, "/org/freedesktop/Notifications", "org.freedesktop.Notifications"); err != nil {
		t.Fatal(err)
	}
	if reply, err := conn.RequestName(notify.ServiceName, dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("owning %s: %v %v", notify.ServiceName, reply, err)
	}
	_, sock, _ := runGateway(t, dir)
	c := api.NewClient(sock)
	ctx := context.Background()
	status := make(chan error, 1)
	go func() { _, err := c.Status(ctx); status <- err }()
	time.Sleep(300 * time.Millisecond) // the status request is waiting on the bus
	start := time.Now()
	if _, err := c.PrepareRun(ctx, "x"); err != nil {
		t.Fatalf("prepare run: %v", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("preparing a run took %s while a status request waited on the notification service", took.Round(time.Millisecond))
	}
	<-status
}
