package procid

import "time"

// SetLaunchSettle sets how long PinLaunched may wait, and returns what
// puts it back.
func SetLaunchSettle(d time.Duration) (restore func()) {
	old := launchSettle
	launchSettle = d
	return func() { launchSettle = old }
}
