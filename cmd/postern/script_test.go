package main

// The command line's contract, tested as age tests its own: each script
// in testdata/ runs the real postern (this test binary, installed as
// "postern" on $PATH) with HOME and the XDG directories in the script's
// work directory. Scripts that need a gateway start one with
// "exec postern agent -D -a $WORK/run/agent.sock &gateway&" and wait for
// it with "ready".

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/postern/postern/gateway/api"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"postern": main})
}

func TestScript(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata",
		// Short paths: sockets live in the work directory.
		WorkdirRoot: t.TempDir(),
		Setup:       setupScript,
		Cmds: map[string]func(*testscript.TestScript, bool, []string){
			"exits": cmdExits,
			"ready": cmdReady,
		},
	})
}

// setupScript gives each script its own home: HOME and the XDG
// directories under $WORK, no agent socket, and the cheapest key
// derivation the vault allows.
func setupScript(e *testscript.Env) error {
	dirs := map[string]string{
		"HOME":            "home",
		"XDG_CONFIG_HOME": "config",
		"XDG_STATE_HOME":  "state",
		"XDG_RUNTIME_DIR": "run",
	}
	for env, dir := range dirs {
		p := filepath.Join(e.WorkDir, dir)
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
