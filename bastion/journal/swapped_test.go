package journal

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/postern/postern/internal/swaptest"
)

// A hostile run can replace the journal file while it is opened: a
// named pipe put there after the path was found to hold a regular file
// held bbolt's open of it, and with it the reader's, for ever. What is
// opened is looked at, not what stood at the path a moment before, and
// the checks read the file bbolt opened.
func TestAJournalSwappedForAPipeHoldsNoOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := open(path, "inst", options{})
	if err != nil {
		t.Fatal(err)
	}
	mustStart(t, j, newEntry("a"))
	j.Close()
	sound, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	swaptest.Race(t, path, sound, time.Second, func() error {
		j, err := openReadOnly(path, time.Second)
		if err == nil {
			j.Close()
		}
		return err
	}, func(err error) bool {
		return errors.Is(err, ErrDamaged) && strings.Contains(err.Error(), "not a regular file but a named pipe")
	})
}
