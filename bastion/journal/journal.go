package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

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

// guardV4 marks an unresolved index keyed by host key, without the port,
// and by login user (see guardKey), that holds every entry whose outcome
// is unknown, retried or not, those ended closed_no_status included.
// Indexes marked otherwise ("host-key" went by port too, "host-key
// without port" by the user as given and without the retried entries,
// "host-key without port, login user" without the entries ended
// closed_no_status) are rebuilt at Open.
const guardV4 = "host-key without port, login user, closed_no_status unknown"

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
	walked   *fileStamp // read-only: the file as the walk of its pages found it
	now      func() time.Time
	ids      idGenerator // new entries' ids, after every id the file holds

	mu     sync.RWMutex // guards closed, and sends on ops
	closed bool
	ops    chan *op
	done   chan struct{} // closed when the writer has stopped

	followers followers

	restarted []*Entry // the entries Open turned unknown (Restarted)

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

	// An existing file is checked read-only first, so that a damaged one
	// (or one that is no journal file at all) is reported without a single
	// byte written to it.
	checkLater := false
	if fi, err := os.Stat(path); err == nil {
		if err := refuseUnreadable(path, fi); err != nil {
			return nil, err
		}
		if checkLater, err = checkFile(path, o.timeout); err != nil {
			return nil, err
		}
	}

	db, f, err := openBolt(path, bolt.Options{Timeout: o.timeout})
	if err != nil {
		return nil, openError(path, err, false)
	}
	if fi, err := f.Stat(); err == nil && fi.Mode().Perm()&0o077 != 0 {
		if err := f.Chmod(0o600); err != nil {
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

// ReopenReadOnly opens again, read-only, the journal j was opened from
// with OpenReadOnly (and closed since), for a reader that reads it a
// page at a time and holds it only while it reads: the walk of the
// file's pages that OpenReadOnly makes is made again only if the file
// changed since j's (another file at the path, another size, time of
// modification or of change), so that listing N entries a page at a
// time walks the file once, not once a page.
func ReopenReadOnly(j *Journal) (*Journal, error) {
	return openReadOnlyAfter(j.path, readOnlyTimeout, j.walked)
}

func openReadOnly(path string, timeout time.Duration) (*Journal, error) {
	return openReadOnlyAfter(path, timeout, nil)
}

// openReadOnlyAfter is openReadOnly, which walks the file's pages unless
// walked is the stamp of the file as a walk found it sound.
func openReadOnlyAfter(path string, timeout time.Duration, walked *fileStamp) (*Journal, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w (%s)", ErrNoJournal, path)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot open the command journal: %w", err)
	}
	if err := refuseUnreadable(path, fi); err != nil {
		return nil, err
	}
	db, f, err := openBolt(path, bolt.Options{ReadOnly: true, Timeout: timeout})
	if err != nil {
		return nil, openError(path, err, true)
	}
	// The lock bbolt took keeps a writer out from here on: a stamp read
	// now is that of the file read.
	stamp, err := stampOf(f)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("cannot open the command journal: %w", err)
	}
	if walked == nil || *walked != stamp {
		if err := checkPageGraph(f, path); err != nil {
			db.Close()
			return nil, err
		}
	}
	j := &Journal{db: db, path: path, readOnly: true, now: time.Now, walked: &stamp}
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

// AsideName is the name beside the journal file at path that MoveAside
// gives it, now: it says when it was put aside.
func AsideName(path string, now time.Time) string {
	aside := path + ".damaged-" + now.UTC().Format("20060102T150405Z")
	if _, err := os.Lstat(aside); err == nil {
		aside += "-" + NewID()
	}
	return aside
}

// MoveAside renames the journal file at path to aside (AsideName); the
// file's bytes are not touched. Open then starts a new journal at path.
// moved says whether the file was moved, also when err says the move may
// not last.
func MoveAside(path, aside string) (moved bool, err error) {
	if err := os.Rename(path, aside); err != nil {
		return false, fmt.Errorf("cannot move the command journal aside: %w", err)
	}
	if err := atomicfile.SyncDir(filepath.Dir(path)); err != nil {
		return true, fmt.Errorf("moved the command journal to %s, but the move may not survive a power loss: %w", aside, err)
	}
	return true, nil
}

// Restarted returns the entries Open turned unknown (bastion_restarted):
// the commands an earlier bastion left without an outcome.
func (j *Journal) Restarted() []*Entry { return j.restarted }

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
	// New entries sort after those the file holds, also when the clock
	// went back since some were made: a list shows the newest first.
	if k, _ := tx.Bucket(bucketEntries).Cursor().Last(); k != nil && ValidID(string(k)) {
		j.ids.after(string(k))
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
		j.restarted = append(j.restarted, e.Clone())
	}
	return nil
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
	// Every entry whose outcome is unknown, retried or not: a retry that
	// ran nothing leaves it guarding (see retriedBy).
	ix := tx.Bucket(bucketUnresolved)
	k := append(guardKey(e.Target, e.Kind, e.CommandSHA256), id...)
	if e.Status() == StatusUnknown {
		return ix.Put(k, []byte{})
	}
	return ix.Delete(k)
}

// guardKeyLen is the length of a guard key: hex SHA-256.
const guardKeyLen = 2 * sha256.Size

// guardKey is the unresolved-index prefix of one command on one
// destination: hex SHA-256 over the verified host key (the host's name,
// lower-cased, and the port, only for an entry that has none, which never
// blocks: an entry is dispatched, and can end unknown, only over a
// connection whose host key was verified), the login user, the kind and
// the command hash. The host key, not the name or the port, says which
// host a command ran on: a host reached once as 127.0.0.1 and again as
// localhost, or through a port forwarded to it, is one host.
func guardKey(t Target, kind, commandSHA256 string) []byte {
	host := "name:" + strings.ToLower(t.Host) + ":" + strconv.Itoa(t.Port)
	if t.HostKey != "" {
		host = "key:" + t.HostKey
	}
	h := sha256.New()
	for _, s := range []string{host, LoginUser(t.User), kind, commandSHA256} {
		fmt.Fprintf(h, "%d:%s;", len(s), s)
	}
	return []byte(hex.EncodeToString(h.Sum(nil)))
}

// reindexGuards rebuilds the unresolved index when it was made by an
// older postern, whose guard keys named the host rather than its key,
// held the port, or the user as given, or which read an entry ended
// closed_no_status as completed.
func reindexGuards(tx *bolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	if string(meta.Get(keyGuard)) == guardV4 {
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
		if e.Status() != StatusUnknown {
			return nil
		}
		return tx.Bucket(bucketUnresolved).Put(append(guardKey(e.Target, e.Kind, e.CommandSHA256), k...), []byte{})
	})
	if err != nil {
		return err
	}
	return meta.Put(keyGuard, []byte(guardV4))
}

func phase(e *Entry) string {
	if e.Dispatched.IsZero() {
		return PhaseIntent
	}
	return PhaseDispatched
}
