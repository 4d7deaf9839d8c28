// Package notifytest starts a throwaway desktop for tests: an X server
// (Xvfb), a private D-Bus session bus (dbus-daemon) and a real
// notification daemon (dunst) on both, all under a temporary directory.
// A person's click on a notification is a real X pointer event sent with
// xdotool. A missing program fails the test (Debian packages xvfb,
// dbus-daemon, dunst and xdotool; .ci/run installs them).
package notifytest

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/postern/postern/internal/dbustest"
)

// Desktop is a running X server, session bus and notification daemon.
type Desktop struct {
	t       testing.TB
	Dir     string
	Display string // the value of DISPLAY
	Bus     string // the value of DBUS_SESSION_BUS_ADDRESS
	Dunst   *exec.Cmd
}

// Env returns the variables a program needs to reach the desktop.
func (d *Desktop) Env() []string {
	return []string{"DISPLAY=" + d.Display, "DBUS_SESSION_BUS_ADDRESS=" + d.Bus}
}

// Start starts the desktop. A left click on a notification from postern
// invokes the action named clickAction ("approve-once", "deny"), as a
// person's dunst configuration may say; the rest of the configuration is
// dunst's default.
func Start(t testing.TB, clickAction string) *Desktop {
	t.Helper()
	for _, p := range []string{"Xvfb", "dunst", "dunstctl", "xdotool"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("%s is not installed (Debian packages xvfb, dbus-daemon, dunst and xdotool; .ci/run installs them): %v", p, err)
		}
	}
	dir, err := os.MkdirTemp("", "notifytest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	d := &Desktop{t: t, Dir: dir}

	d.Display = ":" + Xvfb(t, "-nolisten", "tcp")

	d.Bus = dbustest.Start(t, dir, nil)

	conf := filepath.Join(dir, "dunstrc")
	rc := "[global]\n    mouse_left_click = do_action, close_current\n" +
		"[postern]\n    appname = postern\n    action_name = " + clickAction + "\n"
	if err := os.WriteFile(conf, []byte(rc), 0o600); err != nil {
		t.Fatal(err)
	}
	d.Dunst = exec.Command("dunst", "-config", conf)
	d.Dunst.Env = append(os.Environ(), d.Env()...)
	logf, _ := os.Create(filepath.Join(dir, "dunst.log"))
	d.Dunst.Stdout, d.Dunst.Stderr = logf, logf
	// A desktop's daemon is in no terminal session of the user's.
	d.Dunst.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := d.Dunst.Start(); err != nil {
		t.Fatalf("starting dunst: %v", err)
	}
	t.Cleanup(func() { d.Dunst.Process.Kill(); d.Dunst.Wait(); logf.Close() })
	if err := dbustest.WaitForName(d.Bus, "org.freedesktop.Notifications", 30*time.Second); err != nil {
		t.Fatalf("dunst: %v\n%s", err, d.log())
	}
	return d
}

// Xvfb starts an X server with the options given, on a free display,
// which the test's end stops, and returns the display's number.
func Xvfb(t testing.TB, opts ...string) string {
	t.Helper()
	// Xvfb picks a free display and writes its number on fd 3.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	x := exec.Command("Xvfb", append([]string{"-displayfd", "3", "-screen", "0", "1024x768x24"}, opts...)...)
	x.ExtraFiles = []*os.File{pw}
	if err := x.Start(); err != nil {
		t.Fatalf("starting Xvfb: %v", err)
	}
	pw.Close()
	// Stopped as it stops itself, which removes its socket in
	// /tmp/.X11-unix; killed if it does not.
	t.Cleanup(func() { stop(x) })
	n, err := bufio.NewReader(pr).ReadString('\n')
	pr.Close()
	if err != nil {
		t.Fatalf("Xvfb printed no display number: %v", err)
	}
	return strings.TrimSpace(n)
}

// stop ends a program with SIGTERM, and with SIGKILL if it has not
// ended within five seconds.
func stop(cmd *exec.Cmd) {
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

func (d *Desktop) log() string {
	b, _ := os.ReadFile(filepath.Join(d.Dir, "dunst.log"))
	return string(b)
}

func (d *Desktop) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), d.Env()...)
	return cmd
}

// Displayed returns how many notifications dunst shows now.
func (d *Desktop) Displayed() int {
	out, err := d.command("dunstctl", "count", "displayed").Output()
	if err != nil {
		return -1
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return n
}

// WaitDisplayed waits until dunst shows n notifications, and fails the
// test after limit.
func (d *Desktop) WaitDisplayed(n int, limit time.Duration) {
	d.t.Helper()
	deadline := time.Now().Add(limit)
	for d.Displayed() != n {
		if time.Now().After(deadline) {
			d.t.Fatalf("dunst shows %d notifications, want %d\n%s", d.Displayed(), n, d.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Click clicks the topmost notification with the pointer, as a person
// would: dunst invokes the configured action.
func (d *Desktop) Click() {
	d.t.Helper()
	out, err := d.command("xdotool", "search", "--onlyvisible", "--class", "Dunst").Output()
	ids := strings.Fields(string(out))
	if err != nil || len(ids) == 0 {
		d.t.Fatalf("no visible dunst window (%v)\n%s", err, d.log())
	}
	if out, err := d.command("xdotool", "mousemove", "--window", ids[0], "20", "10", "click", "1").CombinedOutput(); err != nil {
		d.t.Fatalf("xdotool click: %v %s", err, out)
	}
}

// NotifyCalls watches the Notify calls made on the desktop's bus with
// dbus-monitor, from when it returns, and returns what dbus-monitor has
// printed of them so far, each time it is called (each string argument
// in quotes, each number after its type). A missing dbus-monitor fails
// the test (Debian package dbus-bin).
func (d *Desktop) NotifyCalls() func() string {
	d.t.Helper()
	calls := filepath.Join(d.Dir, "notify-calls")
	f, err := os.Create(calls)
	if err != nil {
		d.t.Fatal(err)
	}
	mon := exec.Command("dbus-monitor", "--address", d.Bus, "type='method_call',interface='org.freedesktop.Notifications',member='Notify'")
	mon.Stdout, mon.Stderr = f, f
	if err := mon.Start(); err != nil {
		d.t.Fatalf("dbus-monitor (Debian package dbus-bin): %v", err)
	}
	d.t.Cleanup(func() { mon.Process.Kill(); mon.Wait(); f.Close() })
	read := func() string { b, _ := os.ReadFile(calls); return string(b) }
	// It prints its first lines once it has become a monitor.
	for deadline := time.Now().Add(30 * time.Second); read() == ""; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			d.t.Fatal("dbus-monitor did not start")
		}
	}
	return read
}
