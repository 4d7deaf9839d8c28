// Package dbustest starts a private D-Bus session bus (dbus-daemon) for
// tests, or one of another user, and waits for names to appear on it. A missing dbus-daemon fails
// the test (Debian package dbus-daemon; .ci/run installs it).
package dbustest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	dbus "github.com/godbus/dbus/v5"

	"github.com/postern/postern/internal/sessionbus"
	"github.com/postern/postern/internal/syncbuf"
)

// Start starts dbus-daemon with its socket in dir and the environment
// env, and returns its address (the value of DBUS_SESSION_BUS_ADDRESS).
// It stops when the test ends.
func Start(t testing.TB, dir string, env []string) string {
	t.Helper()
	bus := exec.Command("dbus-daemon", "--session", "--nofork", "--nopidfile", "--print-address=1",
		"--address="+sessionbus.PathAddress(filepath.Join(dir, "bus")))
	bus.Env = env
	return start(t, bus)
}

// StartAs starts, as the user uid, a bus that lets every user in, with
// its socket in a directory of its own, and returns its address. It
// stops when the test ends. It fails the test unless it runs as root.
func StartAs(t testing.TB, uid int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test runs as root (as CI runs the tests): it starts a bus as another user")
	}
	dir, err := os.MkdirTemp("", "dbustest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)
	conf := filepath.Join(dir, "bus.conf")
	if err := os.WriteFile(conf, []byte(`<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=`+filepath.Join(dir, "bus")+`</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(conf, 0o644) // readable by uid whatever the umask
	bus := exec.Command("dbus-daemon", "--config-file="+conf, "--nofork", "--nopidfile", "--print-address=1")
	bus.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	return start(t, bus)
}

// start starts the bus daemon bus, which prints its address.
func start(t testing.TB, bus *exec.Cmd) string {
	t.Helper()
	if _, err := exec.LookPath("dbus-daemon"); err != nil {
		t.Fatalf("dbus-daemon is not installed (Debian package dbus-daemon; .ci/run installs it): %v", err)
	}
	out, err := bus.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncbuf.Buffer
	bus.Stderr = &stderr
	if err := bus.Start(); err != nil {
		t.Fatalf("starting dbus-daemon: %v", err)
	}
	t.Cleanup(func() { bus.Process.Kill(); bus.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		bus.Wait()
		t.Fatalf("dbus-daemon printed no address (%v), %v: %s", err, bus.ProcessState, stderr.String())
	}
	return strings.TrimSpace(line)
}

// WaitForName waits until a client owns name on the bus at addr.
func WaitForName(addr, name string, limit time.Duration) error {
	conn, err := dbus.Connect(addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	deadline := time.Now().Add(limit)
	for {
		var owned bool
		err := conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, name).Store(&owned)
		if err == nil && owned {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not appear on the bus within %s (%v)", name, limit, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
