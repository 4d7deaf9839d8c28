package main

import (
	"errors"
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

// helpRequest asks for a command's usage text (--help): printed on
// standard output, exit 0.
type helpRequest struct{ usage string }

func (h *helpRequest) Error() string { return "help requested" }

// exitError carries an exit status without a message (already printed).
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// report prints err, with a hint where one helps, and returns the exit
// status it calls for. name is the command that failed ("vault").
func report(out, errw io.Writer, name string, err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var hr *helpRequest
	if errors.As(err, &hr) {
		fmt.Fprint(out, hr.usage)
		return exitOK
	}
	var ue *usageError
	if errors.As(err, &ue) {
		errorf(errw, "%s", ue.msg)
		hintf(errw, `run "postern %s --help" for its usage`, name)
		return exitUsage
	}
	errorf(errw, "%s", strings.TrimPrefix(err.Error(), "postern: "))
	if h := hintFor(name, err); h != "" {
		hintf(errw, "%s", h)
	}
	return codeFor(err)
}

// codeFor is the exit status of a failure.
func codeFor(err error) int {
	switch {
	case api.HasCode(err, api.CodeDenied):
		return exitDenied
	case api.HasCode(err, api.CodeUsage):
		return exitUsage
	case errors.Is(err, api.ErrAuditLogFailed), api.HasCode(err, api.CodeAuditFailed):
		return exitAudit
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
