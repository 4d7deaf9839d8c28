//go:build linux && !amd64 && !arm64

package confine

// No filter on other architectures: TIOCSTI is refused only where the
// kernel's dev.tty.legacy_tiocsti is 0.
const (
	nativeArch  = 0
	nativeIoctl = 0
	compatArch  = 0
	compatIoctl = 0
)

var nativeKeyring, compatKeyring []uint32
