//go:build !linux

package hugepages

import "errors"

// Off does nothing but on Linux.
func Off() {}

func setDisabled(bool) error { return errors.ErrUnsupported }
