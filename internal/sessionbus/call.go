package sessionbus

import (
	"context"
	"time"
)

// CallTimeout bounds each step a client of the bus takes: the handshake
// (Connect), and each call to the bus or to a service on it. A bus or a
// service that takes a call and never answers (a stopped daemon) must
// not hold its caller.
const CallTimeout = 5 * time.Second

// CallContext returns the context of one call, which ends after
// CallTimeout.
func CallContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), CallTimeout)
}
