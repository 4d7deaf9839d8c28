package bastion

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
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
	e := cutMarked(t, w, home, env)
	r, requester := probeHere(t, w, e.ID)
	last := r.Resolutions[len(r.Resolutions)-1]
	if r.Status() != journal.StatusCompleted || last.By != journal.ByProbe || last.Result != journal.ResultRan ||
		last.ExitStatus == nil || *last.ExitStatus != 3 {
		t.Fatalf("resolved %s: %+v", r.Status(), last)
	}
	wantEvents(t, w.audit, "command_started", "command_unknown", "command_resolved")
	reqs := w.decider.requests()
	if probe := reqs[len(reqs)-1]; !strings.Contains(string(probe.Command), "postern-probe") || probe.Requester != requester {
		t.Fatalf("the probe was approved as %q for %v", probe.Command, probe.Requester)
	} else if probe.Relay != approvals.RelayProbe || probe.ProbeOf != e.ID {
		// Its card says what it is, whole, where the script is longer
		// than a card shows.
		t.Fatalf("the probe was asked about as relay %q of entry %q, want a probe of %s", probe.Relay, probe.ProbeOf, e.ID)
	}
	if _, err := w.srv.Resolve(context.Background(), e.ID, requester); err == nil || !strings.Contains(err.Error(), "nothing to resolve") {
		t.Fatalf("second Resolve: %v", err)
	}
}

// probeWithin is probeHere's resolution, which must come within d.
func probeWithin(t *testing.T, w *world, id string, d time.Duration) *journal.Entry {
	t.Helper()
	requester, err := procid.Host.Pin(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer requester.Close()
	type resolution struct {
		e   *journal.Entry
		err error
	}
	done := make(chan resolution, 1)
	go func() {
		e, err := w.srv.Resolve(context.Background(), id, requester)
		done <- resolution{e, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.e
	case <-time.After(d):
		t.Fatalf("the probe's resolution has not returned after %v", d)
		return nil
	}
}

// probeHere resolves entry id by its probe, asked for by this process,
// which it returns too.
func probeHere(t *testing.T, w *world, id string) (*journal.Entry, *procid.Peer) {
	t.Helper()
	requester, err := procid.Host.Pin(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { requester.Close() })
	r, err := w.srv.Resolve(context.Background(), id, requester)
	if err != nil {
		t.Fatal(err)
	}
	return r, requester
}

// cutMarked runs "echo started; read line; exit 3" on w's host, with
// markers, in /bin/sh with HOME home; env is offered to the session first
// and must be refused. Once it runs, the host's connections are cut; the
// command reads EOF and exits 3, its end recorded on the host, and its
// entry, unknown, is returned, with the host set to run the probe next.
func cutMarked(t *testing.T, w *world, home string, env map[string]string) *journal.Entry {
	t.Helper()
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
	<-done
	e := w.only()
	if e.Status() != journal.StatusUnknown || !e.Marker {
		t.Fatalf("journal %s, marker %v", e.Status(), e.Marker)
	}
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.shell(home, make(chan struct{})) } })
	return e
}

// The host accepted the command, and the wrapper makes its marker
// directory before anything else: a directory missing when the probe
// looks was removed (anything that runs in the host account can, a
// command sent through this bastion included), or the wrapper was killed
// at once. The probe still fences the run, but says it cannot tell: an
// identical retry needs a person, as before the probe. (The probe said
// the command never started, and an identical one was sent again.)
func TestResolveMarkersGoneAfterTheHostAcceptedTheCommand(t *testing.T) {
	w := newWorldWith(t, func(c *Config) { c.Markers = []string{"127.0.0.*"} }, nil)
	home := t.TempDir()
	e := cutMarked(t, w, home, nil)
	if e.Dispatched.IsZero() {
		t.Fatal("the host's acceptance of the command was not journaled")
	}
	if err := os.RemoveAll(filepath.Join(home, ".local/state/postern/runs", e.ID)); err != nil {
		t.Fatal(err)
	}
	r, _ := probeHere(t, w, e.ID)
	last := r.Resolutions[len(r.Resolutions)-1]
	if r.Status() != journal.StatusUnknown || last.Result != journal.ResultInconclusive || !strings.Contains(last.Evidence, "accepted") {
		t.Fatalf("resolved %s: %+v", r.Status(), last)
	}
	if _, err := os.Stat(filepath.Join(home, ".local/state/postern/runs", e.ID, "fenced")); err != nil {
		t.Fatalf("the probe did not fence the run: %v", err)
	}
	w.denyRetries()
	if _, _, err := w.run("echo started; read line; exit 3", nil); exitStatus(t, err) != ExitDenied {
		t.Fatalf("an identical command after the probe: %v", err)
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
		// Output without end: the gateway keeps a bounded head of it.
		"endless": func(s *hostSession) {
			chunk := bytes.Repeat([]byte("postern-probe 1\n"), 2<<10)
			for {
				if _, err := s.ch.Write(chunk); err != nil {
					return
				}
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			w, e := lostMarked(t)
			w.host.set(func(h *testHost) { h.handle = answer })
			r := probeWithin(t, w, e.ID, 30*time.Second)
			last := r.Resolutions[len(r.Resolutions)-1]
			if r.Status() != journal.StatusUnknown || last.Result != journal.ResultInconclusive || last.By != journal.ByProbe || last.Evidence == "" ||
				name == "endless" && !strings.Contains(last.Evidence, "where it was cut") {
				t.Fatalf("resolved %s: %+v", r.Status(), last)
			}
		})
	}
}

// lostMarked returns a world whose host takes markers, and the entry of
// a command "true" the host accepted before its connection was cut,
// unknown.
func lostMarked(t *testing.T) (*world, *journal.Entry) {
	t.Helper()
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
	return w, e
}

// A probe the host never answers ends when its caller goes (postern
// journal resolve interrupted, or past its time limit), and records
// nothing: the person was told it failed, and a resolution coming later
// would decide the entry's status behind their back.
func TestResolveProbeEndsWithItsCaller(t *testing.T) {
	w, e := lostMarked(t)
	reached := make(chan struct{})
	w.host.set(func(h *testHost) {
		h.handle = func(s *hostSession) {
			close(reached)
			s.ch.Read(make([]byte, 1)) // until the connection goes
		}
	})
	requester, err := procid.Host.Pin(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer requester.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := w.srv.Resolve(ctx, e.ID, requester)
		done <- err
	}()
	<-reached
	cancel()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the probe's resolution has not returned after its caller went")
	}
	if err == nil {
		t.Fatal("a probe whose caller went returned no error")
	}
	if after := w.ended("true"); len(after.Resolutions) != 0 {
		t.Fatalf("a probe whose caller went recorded %+v", after.Resolutions)
	}
}

// An entry resolved by hand is named as show and the probe take it: by
// an unambiguous prefix, in any case, as a person copies it from a list.
func TestResolveByHandTakesAPrefix(t *testing.T) {
	w := newWorld(t)
	e := w.lose("deploy")
	r, err := w.srv.ResolveByHand(strings.ToLower(e.ID[:journal.MinPrefix+2]), journal.Resolution{Result: journal.ResultNotStarted, Evidence: "checked the host"}, "alice")
	if err != nil {
		t.Fatalf("resolving %s by a prefix of its id: %v", e.ID, err)
	}
	if r.ID != e.ID || r.Status() != journal.StatusRetrySafe {
		t.Fatalf("resolved %s (%s), not %s", r.ID, r.Status(), e.ID)
	}
}

// A resolution the audit log cannot record is not made: resolving is an
// approver's act, which lets an identical command run again, and the
// journal took it with no record of who decided.
func TestResolveThatCannotBeRecordedChangesNothing(t *testing.T) {
	w := newWorld(t)
	e := w.lose("deploy")
	w.audit.failOn(audit.EventCommandResolved, errors.New("the audit log cannot be written"))
	if _, err := w.srv.ResolveByHand(e.ID, journal.Resolution{Result: journal.ResultNotStarted, Evidence: "checked the host"}, "alice"); err == nil || !strings.Contains(err.Error(), "audit") {
		t.Fatalf("a resolution the audit log could not record: %v", err)
	}
	if after := w.only(); after.Status() != journal.StatusUnknown || len(after.Resolutions) != 0 {
		t.Fatalf("the journal took a resolution the audit log did not record: %s %+v", after.Status(), after.Resolutions)
	}
}
