//go:build !linux

package park

import "errors"

// poller is not available here: Park reports false, and every connection
// waits in its own goroutine.
type poller struct{}

type spotSys struct{}

var errUnsupported = errors.New("park: parking connections needs Linux's epoll")

func newPoller(*Lot) (*poller, error) { return nil, errUnsupported }

func (*poller) arm(*Spot, uint32) error { return errUnsupported }

func (*poller) disarm(*Spot) {}
