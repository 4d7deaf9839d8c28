// Package syslogtest starts a real rsyslogd for tests (Debian package
// rsyslog, which .ci/run installs), listening on a unix datagram socket,
// a unix stream socket, UDP and TCP on loopback, all in a temporary
// directory, and writing every message it parsed as one line of fields
// to a file the test reads back.
package syslogtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Daemon is a running rsyslogd.
type Daemon struct {
	Dir      string
	Datagram string // unix datagram socket (as /dev/log)
	Stream   string // unix stream socket
	UDP, TCP string // host:port
	out      string

	bin, conf string
	cmd       *exec.Cmd
	log       *os.File
}

// Line is one message as rsyslogd parsed it.
type Line struct {
	Input, Pri, Version, Time, Hostname, AppName, ProcID, MsgID, Data, Msg string
}

// Start starts rsyslogd for the test; it stops when the test ends. A
// missing rsyslogd fails the test.
func Start(t testing.TB) *Daemon {
	t.Helper()
	bin, err := exec.LookPath("rsyslogd")
	if err != nil {
		bin = "/usr/sbin/rsyslogd"
		if _, err := os.Stat(bin); err != nil {
			t.Fatal("rsyslogd is not installed (Debian package rsyslog; .ci/run installs it)")
		}
	}
	dir, err := os.MkdirTemp("", "rsyslog-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	d := &Daemon{Dir: dir, Datagram: filepath.Join(dir, "log.sock"), Stream: filepath.Join(dir, "stream.sock"),
		UDP: freeAddr(t, "udp"), TCP: freeAddr(t, "tcp"), out: filepath.Join(dir, "out.log")}
	udpHost, udpPort, _ := net.SplitHostPort(d.UDP)
	tcpHost, tcpPort, _ := net.SplitHostPort(d.TCP)
	conf := fmt.Sprintf(`global(workDirectory=%q)
module(load="imuxsock" SysSock.Use="off")
input(type="imuxsock" Socket=%q UseSpecialParser="off" ParseHostname="on" IgnoreTimestamp="off")
module(load="imptcp")
input(type="imptcp" path=%q unlink="on" SupportOctetCountedFraming="on")
module(load="imudp")
input(type="imudp" address=%q port=%q)
module(load="imtcp")
input(type="imtcp" address=%q port=%q)
template(name="fields" type="string" string="%%inputname%%\t%%pri%%\t%%protocol-version%%\t%%timereported:::date-rfc3339%%\t%%hostname%%\t%%app-name%%\t%%procid%%\t%%msgid%%\t%%structured-data%%\t%%msg%%\n")
*.* action(type="omfile" file=%q template="fields")
`, dir, d.Datagram, d.Stream, udpHost, udpPort, tcpHost, tcpPort, d.out)
	cf := filepath.Join(dir, "rsyslog.conf")
	if err := os.WriteFile(cf, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	d.bin, d.conf = bin, cf
	d.start(t)
	t.Cleanup(d.stop)
	return d
}

// Restart stops rsyslogd, which closes its connections, and starts it
// again on the same sockets and ports.
func (d *Daemon) Restart(t testing.TB) {
	t.Helper()
	d.stop()
	d.start(t)
}

// start starts rsyslogd and waits until it listens on every socket.
func (d *Daemon) start(t testing.TB) {
	t.Helper()
	cmd := exec.Command(d.bin, "-n", "-f", d.conf, "-i", filepath.Join(d.Dir, "pid"))
	log, _ := os.OpenFile(filepath.Join(d.Dir, "rsyslogd.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		t.Fatalf("starting rsyslogd: %v", err)
	}
	d.cmd, d.log = cmd, log
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, e1 := os.Stat(d.Datagram)
		_, e2 := os.Stat(d.Stream)
		c, e3 := net.Dial("tcp", d.TCP)
		if e3 == nil {
			c.Close()
		}
		if e1 == nil && e2 == nil && e3 == nil {
			return
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(d.Dir, "rsyslogd.log"))
			t.Fatalf("rsyslogd did not start listening: %v %v %v\n%s", e1, e2, e3, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop stops rsyslogd and waits for it to exit.
func (d *Daemon) stop() {
	if d.cmd == nil {
		return
	}
	d.cmd.Process.Kill()
	d.cmd.Wait()
	d.log.Close()
	d.cmd = nil
	os.Remove(d.Datagram)
	os.Remove(d.Stream)
}

func freeAddr(t testing.TB, network string) string {
	t.Helper()
	if network == "udp" {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.LocalAddr().String()
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Lines returns the messages rsyslogd wrote so far.
func (d *Daemon) Lines() []Line {
	b, _ := os.ReadFile(d.out)
	var out []Line
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		f := strings.SplitN(l, "\t", 10)
		if len(f) != 10 {
			continue
		}
		out = append(out, Line{f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], strings.TrimPrefix(strings.TrimPrefix(f[9], " "), "\ufeff")})
	}
	return out
}

// Wait waits until ok holds for the lines written (at most a minute; a
// broken test fails rather than hangs) and returns them.
func (d *Daemon) Wait(t testing.TB, what string, ok func([]Line) bool) []Line {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ls := d.Lines()
		if ok(ls) {
			return ls
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(d.out)
			t.Fatalf("rsyslogd never wrote %s; it wrote:\n%s", what, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
