//go:build !linux

package bastion

import "os"

// handOver returns a file that holds b, for a reader that takes only
// names: a pipe.
func handOver(b []byte) (*os.File, error) { return pipeHandOver(b) }
