package e2e

import "os"

// tempBase is the directory the tests' worlds are made in: $TMPDIR
// (os.TempDir) when it is short enough for the sockets a world holds,
// else /tmp. A socket's path is at most 107 bytes, and the deepest of a
// world's (its gateway's control socket,
// pe2e-NNNNNNNNNN/run/postern/agent.sock.ctl) takes 43 beside the
// directory's own; a longer $TMPDIR (a CI runner's work directory, a
// home directory's tmp) would fail every test that starts a gateway,
// the gateway refusing the socket path as too long.
func tempBase() string {
	if d := os.TempDir(); len(d) <= maxTempBase {
		return d
	}
	return "/tmp"
}

// maxTempBase is the longest $TMPDIR tempBase uses: what is left of a
// socket path's 107 bytes beside the deepest socket of a world, and room
// for a test's own names beside it.
const maxTempBase = 40
