package journal

// Damage: the check after Open, and the guards that turn bbolt's panics
// and faults on a damaged file into ErrDamaged.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// DamageSoFar returns the first damage (ErrDamaged) found in this open
// journal so far, by the check after Open or by any read or change, or
// nil; unlike Damaged it does not wait for that check. A journal that met
// damage refuses every change: its holder stops using it and keeps the
// file for a person to look at (MoveAside).
func (j *Journal) DamageSoFar() error {
	if p := j.broken.Load(); p != nil {
		return *p
	}
	return nil
}

// noteDamage remembers err if it reports damage, and returns it.
func (j *Journal) noteDamage(err error) error {
	if errors.Is(err, ErrDamaged) && j.broken.CompareAndSwap(nil, &err) {
		// Nothing more is committed to it: every Follow stream ends,
		// and DamageSoFar says why.
		j.followers.closeAll()
	}
	return err
}

func openError(path string, err error, readOnly bool) error {
	switch {
	case errors.Is(err, berrors.ErrTimeout) && readOnly:
		return fmt.Errorf("%w: %s is held by a running gateway", ErrBusy, path)
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("%w: %s is in use by another gateway or a reader; stop the other gateway, or try again", ErrBusy, path)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum), errors.Is(err, berrors.ErrVersionMismatch),
		// A file cut short of bbolt's two meta pages; bbolt says so with
		// an error of no type of its own.
		strings.Contains(err.Error(), "file size too small"):
		return damaged(path, err)
	}
	return fmt.Errorf("cannot open the command journal: %w", err)
}

// refuseUnreadable reports as damage what stands at path, as os.Stat
// found it (fi), when it cannot be a journal: no regular file (a named
// pipe, whose open would wait for a writer, a directory, a device), or an
// empty one (a journal cut to nothing: bbolt never leaves a file it made
// empty, and a new journal in its place would drop every retry guard).
func refuseUnreadable(path string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return notAFile(path, fi.Mode())
	}
	if fi.Size() == 0 {
		return damaged(path, errors.New("the file is empty: it was truncated"))
	}
	return nil
}

// notAFile is the damage of a path that holds a file of mode m, no
// regular file.
func notAFile(path string, m fs.FileMode) error {
	return damaged(path, fmt.Errorf("it is not a regular file but %s", fileKind(m)))
}

// fileKind names the kind of a file that is not a regular one.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "a special file (" + m.Type().String() + ")"
}

func damaged(path string, err error) error {
	return fmt.Errorf("%w: %s: %v; the file was left as it is", ErrDamaged, path, err)
}

// checkFile opens an existing journal read-only and checks it before a
// single byte is written. When the last transaction in the file is not one
// of postern's (see markChecked), because another program wrote to it or it
// predates the mark, it reads all of it: every page reachable from the root,
// every record (decoded), the format mark, then bbolt's own consistency
// check (freelist included). When it is, the file is as the journal's own
// code left it, and only the shape of its page tree (the freelist's
// size included) and the format mark are read here; the records are
// checked in the same way after Open, while the journal serves (see
// checkAll), so that opening does not decode every record. The page tree's shape is walked
// (checkPageGraph) before bbolt reads any tree, every time: a cycle in
// it would make bbolt recurse until the process died.
// Damage that makes bbolt panic or fault on the mapped file is caught and
// reported as ErrDamaged. (A panic inside bolt.Open itself leaves its file
// descriptor, and a shared lock, open until the process exits.)
func checkFile(path string, timeout time.Duration) (later bool, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverDamage(path, &err)
	// The freelist is not read with the file: bbolt makes room for as
	// many free pages as it counts, which checkPageGraph checks first.
	db, f, err := openBolt(path, bolt.Options{ReadOnly: true, Timeout: timeout})
	if err != nil {
		return false, openError(path, err, false)
	}
	defer db.Close()
	if err := checkPageGraph(f, path); err != nil {
		return false, err
	}
	j := &Journal{db: db, path: path, readOnly: true}
	err = j.view(func(tx *bolt.Tx) error {
		if err := checkHighWater(path, tx); err != nil {
			return err
		}
		fresh, err := checkFormat(tx)
		if err != nil || fresh {
			return err
		}
		if later = checkedAt(tx); later {
			return nil
		}
		return checkTx(path, tx, nil)
	})
	return later, err
}

// checkTx decodes every record and runs bbolt's consistency check. It
// ends early with errStopped once stop is set.
func checkTx(path string, tx *bolt.Tx, stop *atomic.Bool) error {
	if err := checkRecords(path, tx, stop); err != nil {
		return err
	}
	return checkPages(path, tx)
}

// checkPages runs bbolt's consistency check: every page reachable once,
// none of them free, the freelist without a page twice. The check reads
// the database's freelist, which every commit changes, so tx must be
// writable, or the only transaction that can commit: a read-only one
// beside a writer reads the freelist while the writer changes it (a data
// race) and can take a page a later commit freed for damage.
func checkPages(path string, tx *bolt.Tx) error {
	if err := checkHighWater(path, tx); err != nil {
		return err
	}
	var first error
	for err := range tx.Check() { // read to the end: the check runs in its own goroutine
		if first == nil {
			first = err
		}
	}
	if first != nil {
		return damaged(path, first)
	}
	return nil
}

// checkHighWater checks that the file holds every page below the high
// water mark its meta page names, as bbolt leaves it: bbolt's check
// visits each of those pages, and a meta page that names 2^40 of them
// would keep it (and every change waiting for it) going for days.
func checkHighWater(path string, tx *bolt.Tx) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("cannot check the command journal %s: %w", path, err)
	}
	if tx.Size() > fi.Size() {
		return damaged(path, fmt.Errorf("its meta page names %d bytes of pages, and the file holds %d", tx.Size(), fi.Size()))
	}
	return nil
}

// checkAll reads the whole journal as checkFile does, after an Open that
// left it for later. Damage it finds fails every change from then on, with
// ErrDamaged: the journal is not written over it.
//
// The records are decoded in a read-only transaction, while the journal
// serves. bbolt's consistency check then runs in a writable transaction,
// rolled back, which no commit overlaps (see checkPages); changes wait
// for it.
func (j *Journal) checkAll() {
	defer close(j.checking)
	err := j.guarded(func() error {
		return j.db.View(func(tx *bolt.Tx) error { return checkRecords(j.path, tx, &j.stopCheck) })
	})
	if err == nil && !j.stopCheck.Load() {
		err = j.guarded(func() error {
			tx, err := j.db.Begin(true)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			return checkPages(j.path, tx)
		})
	}
	j.noteDamage(err)
}

// errStopped ends a check that Close interrupted.
var errStopped = errors.New("check stopped")

// Damaged returns the damage the check after Open found, or nil; it waits
// for that check to end.
func (j *Journal) Damaged() error {
	if j.checking != nil {
		<-j.checking
	}
	if p := j.broken.Load(); p != nil {
		return *p
	}
	return nil
}

// checkRecords decodes every entry, until stop is set.
func checkRecords(path string, tx *bolt.Tx, stop *atomic.Bool) error {
	return walk(tx.Bucket(bucketEntries), func(k, v []byte) error {
		if stop != nil && stop.Load() {
			return errStopped
		}
		e, err := DecodeEntry(v)
		if err != nil {
			return damaged(path, fmt.Errorf("entry %q: %v", k, err))
		}
		if e.ID != string(k) {
			return damaged(path, fmt.Errorf("entry %q holds entry %s", k, e.ID))
		}
		return nil
	})
}

// markChecked records, in the transaction tx, that tx was written by this
// code: every transaction of the journal's writer carries the mark, so a
// file whose last transaction has it holds only records this code wrote
// (or checked when it opened the file). Another program's write does not
// carry it; the next Open then decodes every record.
func markChecked(tx *bolt.Tx) error {
	return tx.Bucket(bucketMeta).Put(keyChecked, binary.BigEndian.AppendUint64(nil, uint64(tx.ID())))
}

// checkedAt reports whether the last transaction of the file carries the
// mark of markChecked.
func checkedAt(tx *bolt.Tx) bool {
	v := tx.Bucket(bucketMeta).Get(keyChecked)
	return len(v) == 8 && binary.BigEndian.Uint64(v) == uint64(tx.ID())
}

// walk visits every key of b and of the buckets nested in it.
func walk(b *bolt.Bucket, fn func(k, v []byte) error) error {
	return b.ForEach(func(k, v []byte) error {
		if v == nil {
			if nb := b.Bucket(k); nb != nil {
				return walk(nb, fn)
			}
		}
		return fn(k, v)
	})
}

// checkFormat tells a new, empty database (fresh) from a journal, and
// refuses anything else.
func checkFormat(tx *bolt.Tx) (fresh bool, err error) {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		empty := true
		_ = tx.ForEach(func([]byte, *bolt.Bucket) error { empty = false; return nil })
		if empty {
			return true, nil
		}
		return false, damaged(tx.DB().Path(), errors.New("not a postern command journal"))
	}
	switch f := string(meta.Get(keyFormat)); {
	case f == formatV1:
		if tx.Bucket(bucketEntries) == nil || tx.Bucket(bucketOpen) == nil || tx.Bucket(bucketUnresolved) == nil {
			return false, damaged(tx.DB().Path(), errors.New("buckets missing"))
		}
		return false, nil
	case strings.HasPrefix(f, "postern-journal "):
		return false, fmt.Errorf("the command journal %s has format %q, newer than this postern reads (%q): upgrade postern", tx.DB().Path(), f, formatV1)
	default:
		return false, damaged(tx.DB().Path(), fmt.Errorf("unknown format mark %q", f))
	}
}

// view runs fn in a read transaction, turning a panic inside bbolt, or a
// fault on the mapped file (which is how it meets some kinds of damage),
// into ErrDamaged.
func (j *Journal) view(fn func(tx *bolt.Tx) error) (err error) {
	defer func() { j.noteDamage(err) }()
	return j.guarded(func() error { return j.db.View(fn) })
}

// guarded runs fn, turning a panic inside bbolt, or a fault on the mapped
// file, into ErrDamaged.
func (j *Journal) guarded(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverDamage(j.path, &err)
	return fn()
}

func recoverDamage(path string, err *error) {
	if r := recover(); r != nil {
		*err = damaged(path, fmt.Errorf("%v", r))
	}
}
