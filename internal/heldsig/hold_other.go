//go:build !linux

package heldsig

import (
	"errors"
	"os/exec"
	"syscall"
)

// Hold holds nothing but on Linux: the signals are caught through
// os/signal.
func Hold(bool, []string, ...syscall.Signal) {}

// Held reports false but on Linux.
func Held(syscall.Signal) bool { return false }

// ChildEnv returns nothing but on Linux.
func ChildEnv() []string { return nil }

// Release changes nothing but on Linux.
func Release(*exec.Cmd) {}

// Init does nothing but on Linux.
func Init() {}

type pending struct{}

func watchPending([]syscall.Signal) (*pending, error) { return nil, errors.ErrUnsupported }
func (*pending) wait(func())                          {}
func (*pending) close()                               {}
func takePending(syscall.Signal) bool                 { return false }
