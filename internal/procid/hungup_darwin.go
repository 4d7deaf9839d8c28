package procid

import "net"

// hungUp does not look on macOS: it reports false.
func hungUp(*net.UnixConn) bool { return false }
