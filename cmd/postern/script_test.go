package main

// The command line's contract, tested as age tests its own: each script
// in testdata/ runs the real postern (this test binary, installed as
// "postern" on $PATH) with HOME and the XDG directories in the script's
// work directory. Scripts that need a gateway start one with
// "exec postern agent -D -a $WORK/run/agent.sock &gateway&" and wait for
// it with "ready".

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/postern/postern/bastion/journal"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/confine"
	"github.com/postern/postern/internal/harden"
	"github.com/postern/postern/internal/heldsig"
	"github.com/postern/postern/internal/ptyrelay/ptytest"
)

func TestMain(m *testing.M) {
	// A confined run's helper is this binary, started again; so is
	// what releases the signals a gateway holds for what it starts.
	confine.Init()
	heldsig.Init()
	ptytest.DetachTerminal()
	ptytest.DefaultSignals()
	testscript.Main(m, map[string]func(){"postern": main})
}

// update rewrites the expected outputs (cmp stdout FILE) inside the
// scripts: go test ./cmd/postern -run TestScript -update. Review the diff.
var update = flag.Bool("update", false, "rewrite the files that cmp compares stdout with")

func TestScript(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           "testdata",
		UpdateScripts: *update,
		// Short paths: sockets live in the work directory.
		WorkdirRoot: t.TempDir(),
		Setup:       setupScript,
		Condition:   scriptCondition,
		Cmds: map[string]func(*testscript.TestScript, bool, []string){
			"exits":       cmdExits,
			"ready":       cmdReady,
			"jsonkeys":    cmdJSONKeys,
			"waitcard":    cmdWaitCard,
			"corrupt":     cmdCorrupt,
			"lostcommand": cmdLostCommand,
			"attached":    cmdAttached,
		},
	})
}

// scriptCondition answers a script's conditions: [static], whether the
// postern the scripts run (this test binary) is one static program, as
// make builds it on Linux, or one a dynamic loader starts, as go test
// builds it where a C compiler is found (which postern doctor warns of).
func scriptCondition(cond string) (bool, error) {
	if cond != "static" {
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	interp, err := harden.SelfInterpreter()
	return interp == "", err
}

// setupScript gives each script its own home: the XDG directories under
// $WORK, HOME beside it (not in it: a script's commands start in $WORK,
// and a confined run may not start where it would write the home
// directory), no agent socket, and the cheapest key derivation the vault
// allows.
func setupScript(e *testscript.Env) error {
	home := e.WorkDir + "-home"
	e.Defer(func() { os.RemoveAll(home) })
	dirs := map[string]string{
		"HOME":            home,
		"XDG_CONFIG_HOME": filepath.Join(e.WorkDir, "config"),
		"XDG_STATE_HOME":  filepath.Join(e.WorkDir, "state"),
		"XDG_RUNTIME_DIR": filepath.Join(e.WorkDir, "run"),
	}
	for env, p := range dirs {
		if err := os.MkdirAll(p, 0o700); err != nil {
			return err
		}
		e.Setenv(env, p)
	}
	e.Setenv("POSTERN_KDF_TARGET", "0")
	e.Setenv("LANG", "C")
	return nil
}

// cmdExits runs a program and checks its exit status; its output is
// then checked with stdout and stderr, as after exec.
//
//	exits 2 postern frobnicate
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits STATUS PROGRAM [ARG...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: %v", err)
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
	if args[1] == "postern" && want != 0 {
		checkDocumentedStatus(ts, args[2:], want)
	}
}

// checkDocumentedStatus fails the script when postern ARGS exits with a
// status the EXIT STATUS section of its command's man page does not
// name, so that a status a script sees is one a script can rely on. The
// status of "postern run -- COMMAND" is COMMAND's: it is checked for
// COMMAND when that is postern.
func checkDocumentedStatus(ts *testscript.TestScript, args []string, status int) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return
	}
	if args[0] == "run" {
		if i := slices.Index(args, "--"); i >= 0 && i+1 < len(args) && args[i+1] == "postern" {
			checkDocumentedStatus(ts, args[i+2:], status)
		}
		return
	}
	words, err := documentedStatuses(args[0])
	ts.Check(err)
	if !regexp.MustCompile(`\b` + strconv.Itoa(status) + `\b`).MatchString(words) {
		ts.Fatalf("postern %s exited with status %d, which its man page's EXIT STATUS does not name: %s", args[0], status, words)
	}
}

// cmdReady waits until the gateway serving the agent socket answers, and
// points $SSH_AUTH_SOCK at it.
//
//	ready $WORK/run/agent.sock
func cmdReady(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: ready AGENT-SOCKET")
	}
	c := api.NewClient(args[0])
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := c.Status(ctx)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			ts.Fatalf("the gateway at %s did not answer: %v", args[0], err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ts.Setenv("SSH_AUTH_SOCK", args[0])
}

// cmdAttached waits until the gateway of $SSH_AUTH_SOCK counts a console
// ("postern approve") as an approver: without one, a card is refused at
// once (no_approver).
//
//	exec postern approve &console&
//	attached
func cmdAttached(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: attached")
	}
	c := api.NewClient(ts.Getenv("SSH_AUTH_SOCK"))
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := c.Status(ctx)
		cancel()
		if err == nil && len(st.Approvers) > 0 && st.Approvers[0].Reachable {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	ts.Fatalf("no console attached in 60s")
}

// cmdLostCommand puts in the bastion's journal, as a bastion would, a
// command sent to a host whose outcome was then lost, and sets $ENTRY to
// its id. The gateway must not be running.
//
//	lostcommand 'systemctl restart app'
func cmdLostCommand(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: lostcommand COMMAND")
	}
	j, err := journal.Open(filepath.Join(ts.Getenv("XDG_STATE_HOME"), "postern", "journal.db"), "script")
	ts.Check(err)
	defer j.Close()
	e := &journal.Entry{
		Requester: "ssh (4121) ← bash (4000)", RequesterPID: 4121,
		Target: journal.Target{User: "deploy", Host: "db-1.example", Port: 22, HostKey: "SHA256:notverified"},
		Kind:   journal.KindExec, Command: []byte(args[0]), Approval: "approved_once C0000000a",
	}
	ts.Check(j.Start(e))
	_, err = j.Dispatched(e.ID)
	ts.Check(err)
	_, err = j.MarkUnknown(e.ID, journal.Unknown{Reason: "upstream_lost", Detail: "the connection to the host was cut"})
	ts.Check(err)
	ts.Setenv("ENTRY", e.ID)
}

// cmdCorrupt flips the bits of one byte a third of the way into a file,
// as a disk error or an editor would.
//
//	corrupt $XDG_STATE_HOME/postern/audit.log
func cmdCorrupt(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: corrupt FILE")
	}
	path := ts.MkAbs(args[0])
	b, err := os.ReadFile(path)
	ts.Check(err)
	// The records: a pre-allocated audit log segment ends in zeros.
	n := len(bytes.TrimRight(b, "\x00"))
	if n == 0 {
		ts.Fatalf("%s is empty", path)
	}
	b[n/3] ^= 0xff
	ts.Check(os.WriteFile(path, b, 0o600))
}

// cmdWaitCard waits until the gateway of $SSH_AUTH_SOCK shows a pending
// approval card for the run labelled LABEL, and sets $CARD to its id.
//
//	waitcard LABEL
func cmdWaitCard(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitcard LABEL")
	}
	c := api.NewClient(ts.Getenv("SSH_AUTH_SOCK"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var board api.CardBoard
	errFound := errors.New("found")
	err := c.FollowCards(ctx, false, func(d *api.CardsDelta) error {
		if err := board.Apply(d); err != nil {
			return err
		}
		for _, card := range board.Cards() {
			if card.Run.Label == args[0] {
				ts.Setenv("CARD", card.ID)
				return errFound
			}
		}
		return nil
	})
	switch {
	case errors.Is(err, errFound):
	case err != nil:
		ts.Fatalf("waiting for a card: %v", err)
	default:
		ts.Fatalf("no card for a run labelled %q in 60s", args[0])
	}
}

// cmdJSONKeys prints the field names of the JSON on the last command's
// standard output (one value, or JSON Lines), one path a line, sorted:
// "vault.state", "cards[].run.pid". Compared with cmp against a list in
// the script, it pins the --json contract's names, and nothing else.
// With -except, the keys named are left out: a key present only for
// some builds or states, which the script checks apart.
//
//	exec postern status --json
//	jsonkeys
//	cmp stdout status.keys
func cmdJSONKeys(ts *testscript.TestScript, neg bool, args []string) {
	var except []string
	if len(args) > 0 && args[0] == "-except" {
		except = args[1:]
		args = nil
	}
	if neg || len(args) != 0 {
		ts.Fatalf("usage: jsonkeys [-except key...]")
	}
	dec := json.NewDecoder(strings.NewReader(ts.ReadFile("stdout")))
	keys := map[string]bool{}
	n := 0
	for ; ; n++ {
		var v any
		err := dec.Decode(&v)
		if err == io.EOF {
			break
		}
		if err != nil {
			ts.Fatalf("stdout is not JSON: %v", err)
		}
		jsonPaths(v, "", keys)
	}
	if n == 0 {
		ts.Fatalf("no JSON on stdout")
	}
	for _, k := range except {
		delete(keys, k)
	}
	sorted := slices.Sorted(maps.Keys(keys))
	for _, k := range sorted {
		fmt.Fprintln(ts.Stdout(), k)
	}
}

// jsonPaths adds the paths of v's object fields under prefix.
func jsonPaths(v any, prefix string, keys map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			keys[p] = true
			jsonPaths(x, p, keys)
		}
	case []any:
		for _, x := range v {
			jsonPaths(x, prefix+"[]", keys)
		}
	}
}
