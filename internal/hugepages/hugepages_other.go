//go:build !linux

package hugepages

import "errors"

// Off does nothing but on Linux.
func Off() {}

// TurnOff does nothing but on Linux.
func TurnOff() bool { return false }

// ChildEnv returns nothing but on Linux.
func ChildEnv() []string { return nil }

func setDisabled(bool) error { return errors.ErrUnsupported }
