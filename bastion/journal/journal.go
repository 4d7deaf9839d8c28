package journal

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/postern/postern/internal/atomicfile"
)

// Buckets and keys; see "Storage" in the package documentation.
var (
	bucketMeta       = []byte("meta")
	bucketInstances  = []byte("instances") // inside meta
	bucketEntries    = []byte("entries")
	bucketOpen       = []byte("open")
	bucketUnresolved = []byte("unresolved")
	keyFormat        = []byte("format")
	keyGuard         = []byte("guard")   // inside meta: how the unresolved index is keyed
	keyChecked       = []byte("checked") // inside meta; see markChecked
)

// guardV2 marks an unresolved index keyed by host key (see guardKey).
const guardV2 = "host-key"

const formatV1 = "postern-journal 1"

// How long Open and OpenReadOnly wait for the file lock. bbolt takes an
// exclusive flock for a writer and a shared one for a reader, and without
// a timeout it would wait forever.
const (
	openTimeout     = 3 * time.Second
	readOnlyTimeout = 500 * time.Millisecond
)

// Journal is an open command journal. Its methods are safe for concurrent
// use. Changes made at the same time are committed together (one fsync for
// all of them); each returns only once its change is on disk.
type Journal struct {
	db       *bolt.DB
	path     string
	instance string
	readOnly bool
	now      func() time.Time

	mu     sync.RWMutex // guards closed, and sends on ops
	closed bool
	ops    chan *op
	done   chan struct{} // closed when the writer has stopped

	followers followers

	checking  chan struct{}         // closed when the check after Open ends
	stopCheck atomic.Bool           // Close ends that check early
	broken    atomic.Pointer[error] // damage that check found
}

// options are the test hooks of open.
type options struct {
	now      func() time.Time
	maxBatch int // changes per commit; 1 disables grouping
	timeout  time.Duration
	noSync   bool // build test fixtures without an fsync per commit
}

// Open opens the journal at path for the bastion instance named instance
// (random per process start, see NewID), creating the file (mode 0600) and
// its directory (0700) if needed.
//
// Every entry an earlier instance left without an outcome becomes unknown
// (bastion_restarted) before Open returns. When another process holds the
// file, Open fails after a few seconds with ErrBusy. A file that is not a
// readable journal fails with ErrDamaged and is left untouched.
func Open(path, instance string) (*Journal, error) {
	return open(path, instance, options{})
}

func open(path, instance string, o options) (*Journal, error) {
	if instance == "" || len(instance) > 64 {
		return nil, errors.New("cannot open the command journal: the instance id must be 1 to 64 bytes")
	}
	if o.now == nil {
		o.now = time.Now
	}
	if o.maxBatch == 0 {
		o.maxBatch = 256
	}
	if o.timeout == 0 {
		o.timeout = openTimeout
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("cannot create the command journal's directory: %w", err)
	}

	// An existing file is checked read-only first, so that a damaged one is
	// reported without a single byte written to it. An empty one is a
	// journal cut to nothing (bbolt never leaves a file it made empty): a
	// new journal in its place would drop every retry guard.
	checkLater := false
	if fi, err := os.Stat(path); err == nil {
		if fi.Size() == 0 {
			return nil, damaged(path, errors.New("the file is empty: it was truncated"))
		}
		if checkLater, err = checkFile(path, o.timeout); err != nil {
			return nil, err
		}
	}

	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: o.timeout})
	if err != nil {
		return nil, openError(path, err, false)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(path, 0o600); err != nil {
			db.Close()
			return nil, fmt.Errorf("cannot make the command journal %s private: %w", path, err)
		}
	}
	db.NoSync = o.noSync
	j := &Journal{db: db, path: path, instance: instance, now: o.now}
	if err := j.db.Update(j.prepare); err != nil {
		db.Close()
		if errors.Is(err, ErrDamaged) {
			return nil, err
		}
		return nil, fmt.Errorf("cannot record the bastion start in the command journal %s: %w", path, err)
	}
	j.ops = make(chan *op, 128)
	j.done = make(chan struct{})
	go j.write(o.maxBatch)
	if checkLater {
		j.checking = make(chan struct{})
		go j.checkAll()
	}
	return j, nil
}

// OpenReadOnly opens the journal at path for reading, for the command line
// when no gateway is running. It creates nothing: a missing file is
// ErrNoJournal. While a gateway holds the journal it fails quickly with
// ErrBusy; ask the gateway instead.
//
// No bastion runs while a reader holds the journal, so entries without an
// outcome are shown unknown, with reason bastion_not_running.
func OpenReadOnly(path string) (*Journal, error) {
	return openReadOnly(path, readOnlyTimeout)
}

func openReadOnly(path string, timeout time.Duration) (*Journal, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w (%s)", ErrNoJournal, path)
	}
	if err == nil && fi.Size() == 0 {
		return nil, damaged(path, errors.New("the file is empty: it was truncated"))
	}
	if err != nil {
		return nil, fmt.Errorf("cannot open the command journal: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: timeout})
	if err != nil {
		return nil, openError(path, err, true)
	}
	j := &Journal{db: db, path: path, readOnly: true, now: time.Now}
	if err := j.view(func(tx *bolt.Tx) error {
		fresh, err := checkFormat(tx)
		if err == nil && fresh {
			return fmt.Errorf("%w (%s)", ErrNoJournal, path)
		}
		return err
	}); err != nil {
		db.Close()
		return nil, err
	}
	return j, nil
}

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
	if errors.Is(err, ErrDamaged) {
		j.broken.CompareAndSwap(nil, &err)
	}
	return err
}

// MoveAside renames the journal file at path to one beside it that says
// when it was put aside, and returns that name; the file's bytes are not
// touched. Open then starts a new journal at path.
func MoveAside(path string, now time.Time) (string, error) {
	aside := path + ".damaged-" + now.UTC().Format("20060102T150405Z")
	if _, err := os.Lstat(aside); err == nil {
		aside += "-" + NewID()
	}
	if err := os.Rename(path, aside); err != nil {
		return "", fmt.Errorf("cannot move the command journal aside: %w", err)
	}
	if err := atomicfile.SyncDir(filepath.Dir(path)); err != nil {
		return aside, fmt.Errorf("moved the command journal to %s, but the move may not survive a power loss: %w", aside, err)
	}
	return aside, nil
}

// Path returns the journal's file name.
func (j *Journal) Path() string { return j.path }

// Instance returns the instance id given to Open ("" when read-only).
func (j *Journal) Instance() string { return j.instance }

// Close waits for changes in progress, ends every Follow stream and
// closes the file.
func (j *Journal) Close() error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return nil
	}
	j.closed = true
	if j.ops != nil {
		close(j.ops)
	}
	j.mu.Unlock()
	if j.done != nil {
		<-j.done
	}
	if j.checking != nil {
		j.stopCheck.Store(true)
		<-j.checking
	}
	j.followers.closeAll()
	return j.db.Close()
}

func openError(path string, err error, readOnly bool) error {
	switch {
	case errors.Is(err, berrors.ErrTimeout) && readOnly:
		return fmt.Errorf("%w: %s is held by a running gateway", ErrBusy, path)
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("%w: %s is in use by another gateway or a reader; stop the other gateway, or try again", ErrBusy, path)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum), errors.Is(err, berrors.ErrVersionMismatch):
		return damaged(path, err)
	}
	return fmt.Errorf("cannot open the command journal: %w", err)
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
// code left it, and only the format mark and the freelist are read here;
// the rest is checked in the same way after Open, while the journal serves
// (see checkAll), so that opening does not grow with the journal.
// Damage that makes bbolt panic or fault on the mapped file is caught and
// reported as ErrDamaged. (A panic inside bolt.Open itself leaves its file
// descriptor, and a shared lock, open until the process exits.)
func checkFile(path string, timeout time.Duration) (later bool, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverDamage(path, &err)
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: timeout, PreLoadFreelist: true})
	if err != nil {
		return false, openError(path, err, false)
	}
	defer db.Close()
	j := &Journal{db: db, path: path, readOnly: true}
	err = j.view(func(tx *bolt.Tx) error {
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

// checkAll reads the whole journal as checkFile does, after an Open that
// left it for later. Damage it finds fails every change from then on, with
// ErrDamaged: the journal is not written over it.
//
// bbolt's consistency check in a read-only transaction is not safe while
// writers commit: a page that a later commit freed, and that the
// transaction still reaches, reads as "reachable freed". So damage the
// check finds is confirmed in a writable transaction (rolled back), where
// the check is safe; changes wait for it.
func (j *Journal) checkAll() {
	defer close(j.checking)
	check := func(tx *bolt.Tx) error { return checkTx(j.path, tx, &j.stopCheck) }
	err := j.guarded(func() error { return j.db.View(check) })
	if errors.Is(err, ErrDamaged) {
		err = j.guarded(func() error {
			tx, err := j.db.Begin(true)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			return check(tx)
		})
	}
	if errors.Is(err, ErrDamaged) {
		j.broken.Store(&err)
	}
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

// prepare makes the buckets of a new journal, records this instance, and
// turns every entry an earlier instance left without an outcome into an
// unknown one.
func (j *Journal) prepare(tx *bolt.Tx) (err error) {
	defer recoverDamage(j.path, &err)
	fresh, err := checkFormat(tx)
	if err != nil {
		return err
	}
	if fresh {
		meta, err := tx.CreateBucket(bucketMeta)
		if err != nil {
			return err
		}
		if err := meta.Put(keyFormat, []byte(formatV1)); err != nil {
			return err
		}
		for _, name := range [][]byte{bucketEntries, bucketOpen, bucketUnresolved} {
			if _, err := tx.CreateBucket(name); err != nil {
				return err
			}
		}
	}
	if err := reindexGuards(tx); err != nil {
		return err
	}
	now := j.now().UTC()
	inst, err := tx.Bucket(bucketMeta).CreateBucketIfNotExists(bucketInstances)
	if err != nil {
		return err
	}
	rec, _ := json.Marshal(struct {
		Opened time.Time `json:"opened"`
		PID    int       `json:"pid"`
	}{now, os.Getpid()})
	if err := inst.Put([]byte(j.instance), rec); err != nil {
		return err
	}
	if err := markChecked(tx); err != nil {
		return err
	}

	var stale []string
	_ = tx.Bucket(bucketOpen).ForEach(func(k, v []byte) error {
		stale = append(stale, string(k))
		return nil
	})
	for _, id := range stale {
		e, err := load(tx, id)
		if errors.Is(err, ErrNotFound) {
			return damaged(j.path, fmt.Errorf("the index of commands without an outcome names entry %s, which is missing", id))
		}
		if err != nil {
			return err
		}
		if e.Instance == j.instance || e.End != nil || e.Unknown != nil {
			continue
		}
		e.Unknown = &Unknown{
			At:        now,
			Reason:    ReasonBastionRestarted,
			Detail:    "bastion instance " + e.Instance + " stopped without recording an outcome",
			LastPhase: phase(e),
		}
		b, err := EncodeEntry(e)
		if err != nil {
			return damaged(j.path, err)
		}
		if err := put(tx, e, b); err != nil {
			return err
		}
	}
	return nil
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

// load reads one entry by its exact id.
func load(tx *bolt.Tx, id string) (*Entry, error) {
	v := tx.Bucket(bucketEntries).Get([]byte(id))
	if v == nil {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	e, err := DecodeEntry(v)
	if err != nil {
		return nil, damaged(tx.DB().Path(), fmt.Errorf("entry %s: %v", id, err))
	}
	return e, nil
}

// put stores an encoded entry and keeps the indexes in step with it.
func put(tx *bolt.Tx, e *Entry, rec []byte) error {
	id := []byte(e.ID)
	if err := tx.Bucket(bucketEntries).Put(id, rec); err != nil {
		return err
	}
	open := tx.Bucket(bucketOpen)
	if e.End == nil && e.Unknown == nil {
		if err := open.Put(id, []byte(e.Instance)); err != nil {
			return err
		}
	} else if err := open.Delete(id); err != nil {
		return err
	}
	ix := tx.Bucket(bucketUnresolved)
	k := append(guardKey(e.Target, e.Kind, e.CommandSHA256), id...)
	if e.blocksRetry() {
		return ix.Put(k, []byte{})
	}
	return ix.Delete(k)
}

// guardKey is the unresolved-index prefix of one command on one
// destination: hex SHA-256 over the verified host key (the host's name,
// lower-cased, only for an entry that has none, which never blocks: an
// entry is dispatched, and can end unknown, only over a connection whose
// host key was verified), the user, the port, the kind and the command
// hash. The host key, not the name, says which host a command ran on: a
// host reached once as 127.0.0.1 and again as localhost is one host.
func guardKey(t Target, kind, commandSHA256 string) []byte {
	host := "name:" + strings.ToLower(t.Host)
	if t.HostKey != "" {
		host = "key:" + t.HostKey
	}
	h := sha256.New()
	for _, s := range []string{host, t.User, strconv.Itoa(t.Port), kind, commandSHA256} {
		fmt.Fprintf(h, "%d:%s;", len(s), s)
	}
	return []byte(hex.EncodeToString(h.Sum(nil)))
}

// reindexGuards rebuilds the unresolved index when it was made by an
// older postern, whose guard keys named the host rather than its key.
func reindexGuards(tx *bolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	if string(meta.Get(keyGuard)) == guardV2 {
		return nil
	}
	if err := tx.DeleteBucket(bucketUnresolved); err != nil {
		return err
	}
	if _, err := tx.CreateBucket(bucketUnresolved); err != nil {
		return err
	}
	err := tx.Bucket(bucketEntries).ForEach(func(k, v []byte) error {
		e, err := DecodeEntry(v)
		if err != nil {
			return damaged(tx.DB().Path(), fmt.Errorf("entry %q: %v", k, err))
		}
		if !e.blocksRetry() {
			return nil
		}
		return tx.Bucket(bucketUnresolved).Put(append(guardKey(e.Target, e.Kind, e.CommandSHA256), k...), []byte{})
	})
	if err != nil {
		return err
	}
	return meta.Put(keyGuard, []byte(guardV2))
}

func phase(e *Entry) string {
	if e.Dispatched.IsZero() {
		return PhaseIntent
	}
	return PhaseDispatched
}
