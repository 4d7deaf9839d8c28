package askpass

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/postern/postern/internal/smallfile"
)

// What runs for a pinned program is what was checked: on Linux a copy
// of the file in a sealed memfd, made as it is read and hashed, which no
// one can change; where memfds may not be executed (vm.memfd_noexec =
// 2), the file as it was opened, run by its descriptor, so that a file
// put in its place is not; elsewhere the program's path, right after
// the check.

// errImageNotExecutable is newImage's report that no executable copy
// can be made here.
var errImageNotExecutable = errors.New("no executable memfd may be made")

// maxProgram bounds the askpass program's size.
const maxProgram = 256 << 20

// readProgram opens the regular file at path, hashes it, copying it to
// cp when cp is not nil, and returns it open, with the SHA-256 of what
// it read.
func readProgram(path string, cp *os.File) (f *os.File, sum [32]byte, err error) {
	f, fi, err := smallfile.Open(path)
	if err != nil {
		return nil, sum, err
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	if fi.Size() > maxProgram {
		return nil, sum, fmt.Errorf("%w: %d bytes", smallfile.ErrTooLarge, fi.Size())
	}
	h := sha256.New()
	var w io.Writer = h
	if cp != nil {
		w = io.MultiWriter(h, cp)
	}
	n, err := io.Copy(w, io.LimitReader(f, maxProgram+1))
	if err != nil {
		return nil, sum, err
	}
	if n > maxProgram {
		return nil, sum, fmt.Errorf("%w: more than %d bytes", smallfile.ErrTooLarge, maxProgram)
	}
	h.Sum(sum[:0])
	return f, sum, nil
}
