package journal

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func fileState(t *testing.T, path string) (string, time.Time) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	return fmt.Sprintf("%x", sha256.Sum256(b)), fi.ModTime()
}

// lose starts e and loses its outcome: it guards against a retry.
func lose(t *testing.T, j *Journal, e *Entry) *Entry {
	t.Helper()
	mustStart(t, j, e)
	j.Dispatched(e.ID)
	if _, err := j.MarkUnknown(e.ID, Unknown{Reason: ReasonUpstreamLost}); err != nil {
		t.Fatal(err)
	}
	return e
}

// A journal that is damaged in any way, cut short included, is refused
// and left exactly as it was: nothing starts over in its place.
func TestDamagedFileUntouched(t *testing.T) {
	cases := map[string]func(t *testing.T, path string){
		"garbage": func(t *testing.T, path string) {
			os.WriteFile(path, bytes.Repeat([]byte("not a database "), 1000), 0o600)
		},
		"short": func(t *testing.T, path string) {
			os.WriteFile(path, []byte("x"), 0o600)
		},
		"truncated to nothing": func(t *testing.T, path string) {
			j, _ := Open(path, "inst")
			lose(t, j, newEntry("make deploy"))
			j.Close()
			os.Truncate(path, 0)
		},
		"truncated halfway": func(t *testing.T, path string) {
			j, _ := Open(path, "inst")
			for i := range 200 {
				lose(t, j, newEntry(fmt.Sprint("command number ", i, strings.Repeat(" pad", 50))))
			}
			j.Close()
			fi, _ := os.Stat(path)
			os.Truncate(path, fi.Size()/2)
		},
		// Shorter than bbolt's two meta pages: its own check says so in an
		// error of its own.
		"cut to one page": func(t *testing.T, path string) {
			j, _ := Open(path, "inst")
			lose(t, j, newEntry("make deploy"))
			j.Close()
			os.Truncate(path, int64(os.Getpagesize()))
		},
		"cut short of two pages": func(t *testing.T, path string) {
			j, _ := Open(path, "inst")
			lose(t, j, newEntry("make deploy"))
			j.Close()
			os.Truncate(path, int64(2*os.Getpagesize()-1))
		},
		"foreign bbolt": func(t *testing.T, path string) {
			db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			db.Update(func(tx *bolt.Tx) error {
				b, _ := tx.CreateBucket([]byte("widgets"))
				return b.Put([]byte("a"), []byte("b"))
			})
			db.Close()
		},
		"bad record": func(t *testing.T, path string) {
			j, err := Open(path, "inst")
			if err != nil {
				t.Fatal(err)
			}
			e := newEntry("ls")
			j.Start(e)
			j.Close()
			db, _ := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
			db.Update(func(tx *bolt.Tx) error {
				return tx.Bucket(bucketEntries).Put([]byte(e.ID), []byte("\x01{\"id\":\"garbage\"}"))
			})
			db.Close()
		},
		"newer format": func(t *testing.T, path string) {
			j, _ := Open(path, "inst")
			j.Close()
			db, _ := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
			db.Update(func(tx *bolt.Tx) error {
				return tx.Bucket(bucketMeta).Put(keyFormat, []byte("postern-journal 2"))
			})
			db.Close()
		},
		"scrambled pages": func(t *testing.T, path string) {
			j, _ := Open(path, "inst")
			for i := range 200 {
				j.Start(newEntry(fmt.Sprint("command number ", i, strings.Repeat(" pad", 50))))
			}
			j.Close()
			b, _ := os.ReadFile(path)
			page := os.Getpagesize()
			for i := 2 * page; i < len(b); i++ {
				b[i] = byte(i*7 + 3)
			}
			os.WriteFile(path, b, 0o600)
		},
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "journal.db")
			damage(t, path)
			sum, mtime := fileState(t, path)
			time.Sleep(10 * time.Millisecond)
			j, err := Open(path, "inst-new")
			if err == nil {
				j.Close()
				t.Fatal("Open accepted a damaged journal")
			}
			if name == "newer format" {
				if !strings.Contains(err.Error(), "upgrade postern") {
					t.Fatalf("newer format: %v", err)
				}
			} else if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "left as it is") {
				t.Fatalf("Open: %v", err)
			}
			if r, err := OpenReadOnly(path); err == nil {
				_, lerr := r.List(ListOptions{})
				r.Close()
				if lerr == nil && name != "newer format" && name != "foreign bbolt" {
					t.Fatalf("read-only List of a damaged journal succeeded")
				}
			} else if errors.Is(err, ErrNoJournal) {
				t.Fatalf("read-only: a damaged journal reads as no journal: %v", err)
			} else if strings.HasPrefix(name, "cut ") && !errors.Is(err, ErrDamaged) {
				t.Fatalf("read-only: %v", err)
			}
			if s, m := fileState(t, path); s != sum || !m.Equal(mtime) {
				t.Fatal("the damaged file was changed")
			}
			t.Log(err)
		})
	}
}

// Scrambling any one page of a journal either leaves it readable (a free
// page) or is reported as ErrDamaged: by Open when it reads the page, or
// else by the check that runs after it, which then refuses every change.
// Nothing crashes, and the scrambled page is never written over.
func TestEveryPageScrambled(t *testing.T) {
	dir := t.TempDir()
	orig := filepath.Join(dir, "orig.db")
	j, err := Open(orig, "inst")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		e := mustStart(t, j, newEntry(fmt.Sprint("command number ", i, strings.Repeat(" pad", 40))))
		if i%2 == 0 {
			j.End(e.ID, End{Outcome: OutcomeExited, OutputTail: bytes.Repeat([]byte("out"), 300)})
		}
	}
	j.Close()
	good, _ := os.ReadFile(orig)
	page := os.Getpagesize()
	damagedPages := 0
	for p := 2; p*page < len(good); p++ {
		b := append([]byte{}, good...)
		for i := p * page; i < (p+1)*page; i++ {
			b[i] = byte(i*13 + p)
		}
		path := filepath.Join(dir, fmt.Sprintf("p%d.db", p))
		os.WriteFile(path, b, 0o600)
		sum, _ := fileState(t, path)
		j, err := Open(path, "inst-new")
		if err == nil {
			_, lerr := j.List(ListOptions{})
			derr := j.Damaged()
			serr := j.Start(newEntry("after"))
			j.Close()
			switch {
			case derr == nil && lerr != nil:
				t.Errorf("page %d: Open and its check accepted the file, List failed: %v", p, lerr)
			case derr != nil && (!errors.Is(derr, ErrDamaged) || !errors.Is(serr, ErrDamaged)):
				t.Errorf("page %d: damage %v, then Start: %v", p, derr, serr)
			case derr != nil:
				damagedPages++
				after, _ := os.ReadFile(path)
				if !bytes.Equal(after[p*page:(p+1)*page], b[p*page:(p+1)*page]) {
					t.Errorf("page %d: the damaged page was written over", p)
				}
			}
			continue
		}
		if !errors.Is(err, ErrDamaged) {
			t.Errorf("page %d: %v", p, err)
		}
		damagedPages++
		if s, _ := fileState(t, path); s != sum {
			t.Errorf("page %d: the damaged file was changed", p)
		}
	}
	if damagedPages == 0 {
		t.Fatal("no scrambled page was noticed")
	}
	t.Logf("%d of %d pages noticed when scrambled", damagedPages, len(good)/page-2)
}
