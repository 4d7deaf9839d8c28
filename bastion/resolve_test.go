package bastion

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/bastion/journal"
	"github.com/postern/postern/internal/procid"
)

// A command whose connection was cut, on a host with markers, is
// resolved by reading its markers over a fresh, approved connection: the
// wrapper and the probe run for real in /bin/sh, as sshd would run them.
func TestResolveByProbe(t *testing.T) { resolveByProbe(t, nil) }

// A session may send environment variables, and a host may accept
// XDG_STATE_HOME: the markers stay where the probe, which sends none,
// looks, and a command that ran is never found "not started".
func TestResolveIgnoresTheSessionsEnvironment(t *testing.T) {
	resolveByProbe(t, map[string]string{"XDG_STATE_HOME": t.TempDir(), "HOME": t.TempDir()})
}

func resolveByProbe(t *testing.T, env map[string]string) {
	w := newWorldWith(t, func(c *Config) { c.Markers = []string{"127.0.0.*"} }, nil)
	home := t.TempDir()
	done := make(chan struct{})
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.shell(home, done) } })

	sess, err := w.dial().NewSession()
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range env {
		if err := sess.Setenv(k, v); err != nil {
			t.Fatal(err)
		}
	}
	stdin, _ := sess.StdinPipe()
	stdout, _ := sess.StdoutPipe()
	var errOut bytes.Buffer
	sess.Stderr = &errOut
	if err := sess.Start("echo started; read line; exit 3"); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len("started\n"))
	if _, err := io.ReadFull(stdout, got); err != nil || string(got) != "started\n" {
		t.Fatalf("read %q %v; stderr %q", got, err, errOut.String())
	}
	w.host.cut()
	var missing *ssh.ExitMissingError
	if err := sess.Wait(); !errors.As(err, &missing) {
		t.Fatalf("Wait: %v", err)
	}
	stdin.Close()
	<-done // the command read EOF and exited 3, its end recorded on the host
	e := w.only()
	if e.Status() != journal.StatusUnknown || !e.Marker {
		t.Fatalf("journal %s, marker %v", e.Status(), e.Marker)
	}

	requester, err := procid.Host.Pin(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer requester.Close()
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.shell(home, make(chan struct{})) } })
	r, err := w.srv.Resolve(context.Background(), e.ID, requester)
	if err != nil {
		t.Fatal(err)
	}
	last := r.Resolutions[len(r.Resolutions)-1]
	if r.Status() != journal.StatusCompleted || last.By != journal.ByProbe || last.Result != journal.ResultRan ||
		last.ExitStatus == nil || *last.ExitStatus != 3 {
		t.Fatalf("resolved %s: %+v", r.Status(), last)
	}
	wantEvents(t, w.audit, "command_started", "command_unknown", "command_resolved")
	reqs := w.decider.requests()
	if probe := reqs[len(reqs)-1]; !strings.Contains(string(probe.Command), "postern-probe") || probe.Requester != requester {
		t.Fatalf("the probe was approved as %q for %v", probe.Command, probe.Requester)
	}
	if _, err := w.srv.Resolve(context.Background(), e.ID, requester); err == nil || !strings.Contains(err.Error(), "nothing to resolve") {
		t.Fatalf("second Resolve: %v", err)
	}
}
