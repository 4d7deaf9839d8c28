package main

// This file holds the command line's rules for talking to people:
//   - Diagnostics go to standard error, one line each, prefixed
//     "postern: error: ", "postern: warning: " or "postern: hint: ",
//     lower-case, no trailing period.
//   - Results go to standard output; every listing command takes --json.
//   - Secrets are read from the terminal (/dev/tty), an askpass program
//     or the documented passphrase file, never from arguments.
//   - Exit status: 0 ok, 1 failure, 2 usage, 3 audit verification
//     failed, 254 denied by policy or approval.

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/postern/postern/gateway/api"
)

const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	exitAudit   = 3
	exitDenied  = 254
)

func errorf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "postern: error: "+format+"\n", args...)
}

func warningf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "postern: warning: "+format+"\n", args...)
}

func hintf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "postern: hint: "+format+"\n", args...)
}

// usageError is a mistake on the command line (exit 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// exitError carries an exit status without a message (already printed).
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// report prints err and returns the exit status it calls for.
func report(w io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var ue *usageError
	if errors.As(err, &ue) {
		errorf(w, "%s", ue.msg)
		return exitUsage
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	errorf(w, "%s", strings.TrimPrefix(err.Error(), "postern: "))
	switch {
	case errors.Is(err, api.ErrNoGateway):
		hintf(w, `is "postern agent" running, and is SSH_AUTH_SOCK set?`)
	case api.HasCode(err, api.CodeStaleKey):
		hintf(w, `unlock with the passphrase and --remember`)
	case api.HasCode(err, api.CodeDenied):
		return exitDenied
	case api.HasCode(err, api.CodeUsage):
		return exitUsage
	}
	return exitFailure
}

// newFlags returns a flag set that reports usage errors instead of
// exiting, with usage text u.
func newFlags(name, u string, errw io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(errw)
	fs.Usage = func() { fmt.Fprint(errw, u) }
	return fs
}

// parse parses args and turns flag errors into usage errors.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &exitError{exitUsage}
	}
	return nil
}

// gatewayFlags adds --socket to fs, parses args and returns a client of
// the gateway the command talks to.
func gatewayFlags(fs *flag.FlagSet, args []string) (*api.Client, error) {
	sock := socketFlag(fs)
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	return gatewayClient(*sock)
}

// socketFlag adds --socket to fs.
func socketFlag(fs *flag.FlagSet) *string {
	return fs.String("socket", "", "agent socket of the gateway (default $SSH_AUTH_SOCK)")
}

// gatewayClient returns a client of the gateway serving the agent socket
// sock, or $SSH_AUTH_SOCK.
func gatewayClient(sock string) (*api.Client, error) {
	if sock == "" {
		sock = os.Getenv("SSH_AUTH_SOCK")
	}
	if sock == "" {
		return nil, errors.New(`no gateway: $SSH_AUTH_SOCK is not set; start one with "postern agent" or pass --socket`)
	}
	return api.NewClient(sock), nil
}

// printJSONLines writes one JSON object per line.
func printJSONLines[T any](w io.Writer, items []T) error {
	enc := json.NewEncoder(w)
	for _, it := range items {
		if err := enc.Encode(it); err != nil {
			return err
		}
	}
	return nil
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// exitStatusOf turns a finished child's error into the exit status the
// caller should pass through: its exit code, or 128 plus the signal that
// ended it.
func exitStatusOf(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			return &exitError{128 + int(st.Signal())}
		}
		return &exitError{ee.ExitCode()}
	}
	return err
}

// leadingOperand splits off an operand written before the flags
// ("postern approve ID --session").
func leadingOperand(args []string) (string, []string) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return args[0], args[1:]
	}
	return "", args
}
