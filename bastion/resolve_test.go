package bastion

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

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
	// Variables other than the locale's are refused: they never reach
	// the host.
	for k, v := range env {
		if err := sess.Setenv(k, v); err == nil {
			t.Fatalf("%s was accepted", k)
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

// A probe the host answers with nothing useful (a shell that prints no
// report, exits 0, or output cut short) is evidence of nothing: the entry
// is resolved inconclusive and stays unknown, never not_started, so a
// retry still needs a person.
func TestResolveUnansweredProbeIsInconclusive(t *testing.T) {
	for name, answer := range map[string]func(*hostSession){
		"silent":  func(s *hostSession) { s.exit(0) },
		"garbage": func(s *hostSession) { io.WriteString(s.ch, "postern-probe 1\nstate=absent"); s.exit(0) },
		"failed":  func(s *hostSession) { io.WriteString(s.ch, "sh: 1: flock: not found\n"); s.exit(127) },
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorldWith(t, func(c *Config) { c.Markers = []string{"127.0.0.*"} }, nil)
			w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.ch.Read(make([]byte, 1)) } })
			sess, err := w.dial().NewSession()
			if err != nil {
				t.Fatal(err)
			}
			if err := sess.Start("true"); err != nil {
				t.Fatal(err)
			}
			for i := 0; len(w.entries()) == 0; i++ { // dispatched
				if i == 1000 {
					t.Fatal("the command was never journaled")
				}
				time.Sleep(10 * time.Millisecond)
			}
			w.host.cut()
			sess.Wait()
			e := w.ended("true")
			if e.Status() != journal.StatusUnknown {
				t.Fatalf("journal %s", e.Status())
			}
			requester, err := procid.Host.Pin(os.Getpid())
			if err != nil {
				t.Fatal(err)
			}
			defer requester.Close()
			w.host.set(func(h *testHost) { h.handle = answer })
			r, err := w.srv.Resolve(context.Background(), e.ID, requester)
			if err != nil {
				t.Fatal(err)
			}
			last := r.Resolutions[len(r.Resolutions)-1]
			if r.Status() != journal.StatusUnknown || last.Result != journal.ResultInconclusive || last.By != journal.ByProbe || last.Evidence == "" {
				t.Fatalf("resolved %s: %+v", r.Status(), last)
			}
		})
	}
}
