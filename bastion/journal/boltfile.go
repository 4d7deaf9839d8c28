package journal

import (
	"errors"
	"os"

	bolt "go.etcd.io/bbolt"

	"github.com/postern/postern/internal/smallfile"
)

// openBolt opens the bbolt file at path as bolt.Open does with opts, but
// refuses at once what is not a regular file (a named pipe, whose open
// would wait for a writer), and returns the file bbolt opened, for the
// checks made beside bbolt's reads (the page walk, the file's stamp): a
// hostile run can put another file at the path at any moment, and they
// must read what bbolt reads, not what stands at the path later.
func openBolt(path string, opts bolt.Options) (*bolt.DB, *os.File, error) {
	var opened *os.File
	opts.OpenFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		f, _, err := smallfile.OpenFile(name, flag, perm)
		opened = f
		return f, err
	}
	db, err := bolt.Open(path, 0o600, &opts)
	if err != nil {
		var nr *smallfile.NotRegularError
		if errors.As(err, &nr) {
			return nil, nil, notAFile(path, nr.Mode)
		}
		return nil, nil, err
	}
	return db, opened, nil
}
