//go:build !linux

package askpass

import "os"

// newImage makes no copy where there are no sealed memfds: the program
// runs by its path, right after it was checked.
var newImage = func() (*os.File, error) { return nil, nil }

func sealImage(f *os.File) (*os.File, error) { return f, nil }
