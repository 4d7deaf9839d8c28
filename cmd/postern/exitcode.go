package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"

	"github.com/postern/postern/gateway/api"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	exitAudit   = 3   // audit verification failed
	exitDenied  = 254 // denied by policy or approval
)

// usageError is a mistake on the command line (exit 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// exitError carries an exit status without a message (already printed).
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// report prints err, with a hint where one helps, and returns the exit
// status it calls for.
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
		hintf(w, `start the gateway with "postern agent", and check $SSH_AUTH_SOCK or --socket`)
	case errors.Is(err, api.ErrNoAuditLog):
		hintf(w, `"postern vault init" sets one up`)
	case errors.Is(err, api.ErrNoBastionSocket):
		hintf(w, "pass --socket")
	case api.HasCode(err, api.CodeStaleKey):
		hintf(w, "unlock with the passphrase and --remember")
	case api.HasCode(err, api.CodeDenied):
		return exitDenied
	case api.HasCode(err, api.CodeUsage):
		return exitUsage
	}
	return exitFailure
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
