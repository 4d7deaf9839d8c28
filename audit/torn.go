package audit

// A torn write: the bytes a crash left half written at the end of the log
// (or of a segment). Opening keeps them in a side file next to the log,
// then removes them, and records where they were (EventLogRecovered).

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/postern/postern/internal/atomicfile"
)

// clearTorn saves a torn write to a side file and removes it from the log:
// a version 1 file is cut, a segment's bytes are zeroed.
func clearTorn(f *os.File, path string, sc *scanner) (*Event, error) {
	t := sc.torn
	seg := sc.tornSeg
	name := path
	target := f
	if seg != nil && seg.index > 0 {
		name = segmentName(path, seg.index)
		var err error
		if target, err = os.OpenFile(name, os.O_RDWR|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0); err != nil {
			return nil, fmt.Errorf("open audit log: %w", err)
		}
		defer target.Close()
	}
	saved, err := saveTorn(target, name, t.Offset, t.Offset+t.Bytes)
	if err != nil {
		return nil, err
	}
	v1 := (seg == nil || seg.index == 0) && sc.hdr.version == version1
	if v1 {
		err = target.Truncate(t.Offset)
	} else {
		_, err = target.WriteAt(make([]byte, t.Bytes), t.Offset)
	}
	if err != nil {
		return nil, fmt.Errorf("open audit log %s: clear the torn write at offset %d: %w", name, t.Offset, err)
	}
	if err := target.Sync(); err != nil {
		return nil, fmt.Errorf("open audit log %s: sync after clearing the torn write: %w", name, err)
	}
	return &Event{Type: EventLogRecovered, Detail: map[string]string{
		"file":     filepath.Base(name),
		"offset":   strconv.FormatInt(t.Offset, 10),
		"bytes":    strconv.FormatInt(t.Bytes, 10),
		"saved_to": saved,
		"reason":   t.Reason,
	}}, nil
}

// saveTorn copies the bytes from off to end into a new file next to the log
// and returns its name. It copies at most maxWrite bytes: a torn write
// is no longer, and what may follow it to the end of the file is zeros.
func saveTorn(f *os.File, path string, off, end int64) (string, error) {
	end = min(end, off+maxWrite)
	name := path + ".torn-" + strconv.FormatInt(off, 10)
	var side *os.File
	var err error
	for i := 0; i < 100; i++ {
		n := name
		if i > 0 {
			n = name + "-" + strconv.Itoa(i)
		}
		side, err = os.OpenFile(n, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			name = n
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return "", fmt.Errorf("open audit log %s: save the torn tail before cutting it: %w", path, err)
	}
	_, err = io.Copy(side, io.NewSectionReader(f, off, end-off))
	if err == nil {
		err = side.Sync()
	}
	if cerr := side.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = atomicfile.SyncDir(filepath.Dir(path))
	}
	if err != nil {
		os.Remove(name)
		return "", fmt.Errorf("open audit log %s: save the torn tail to %s: %w", path, name, err)
	}
	return name, nil
}
