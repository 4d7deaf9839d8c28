//go:build unix && !linux

package audit

import "os"

// datasync makes written data durable. On Darwin, File.Sync issues
// F_FULLFSYNC.
func datasync(f *os.File) error { return f.Sync() }
