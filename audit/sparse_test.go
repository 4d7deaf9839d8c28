package audit

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
)

// A program with the person's uid can put a file of terabytes that holds
// next to nothing on disk (truncate -s 1T) where the log or a segment
// was. Holes read as zeros, so such a file gets the verdict a small file
// of zeros with the same bytes gets, and in time that depends on the
// bytes on disk, not on the file's size; opening a new log over such a
// file never fills it.

const sparseSize = 64 << 30

// plantFile makes path a file of size bytes, zero but for the bytes in
// at, without writing the zeros: the file holds holes where they are.
func plantFile(t *testing.T, path string, size int64, at map[int64]string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	for off, s := range at {
		if _, err := f.WriteAt([]byte(s), off); err != nil {
			t.Fatal(err)
		}
	}
	if size > 1<<30 {
		var st syscall.Stat_t
		if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
			t.Fatal(err)
		}
		if st.Blocks*512 > 1<<30 {
			t.Fatalf("the temporary directory's file system keeps no holes (%d bytes allocated): these tests need one that does", st.Blocks*512)
		}
	}
}

// growFile makes the file at path size bytes long, the bytes added being
// a hole, and puts the bytes in at into it.
func growFile(t *testing.T, path string, size int64, at map[int64]string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	for off, s := range at {
		if _, err := f.WriteAt([]byte(s), off); err != nil {
			t.Fatal(err)
		}
	}
}

// within runs f and fails the test when it has not returned after d.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s has not returned after %s", what, d)
	}
}

// verdict is what verification and opening say of a log.
type verdict struct {
	ok      bool
	kind    FindingKind
	torn    bool
	damaged bool // Open failed with ErrDamaged
	openErr bool // Open failed otherwise
}

// judge verifies the log of tl, then opens it, each within d.
func judge(t *testing.T, tl *testLog, d time.Duration) verdict {
	t.Helper()
	var v verdict
	within(t, d, "verify", func() {
		r, err := VerifyPath(tl.path, tl.pin())
		if err != nil {
			t.Errorf("verify: %v", err)
			return
		}
		v.ok, v.torn = r.OK, r.Torn != nil
		if r.Failure != nil {
			v.kind = r.Failure.Kind
		}
	})
	within(t, d, "open", func() {
		l, err := Open(tl.cfg)
		if err == nil {
			err = l.Close()
		}
		v.damaged = errors.Is(err, ErrDamaged)
		v.openErr = err != nil && !v.damaged
		if v.openErr {
			t.Logf("open: %v", err)
		}
	})
	return v
}

// sparseCase is a log made in tl, then a file planted beside it or in
// it, of size bytes, whose other bytes sit at offsets scaled to size.
type sparseCase struct {
	name  string
	plant func(t *testing.T, tl *testLog, size int64)
	check func(t *testing.T, tl *testLog, size int64, v verdict)
}

func writtenLog(t *testing.T) *testLog {
	tl := newTestSetup(t)
	l := tl.open(t)
	mustAppend(t, l, ev(EventSign, "R1"))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return tl
}

func TestSparseFiles(t *testing.T) {
	cases := []sparseCase{{
		name: "zero segment after the log",
		plant: func(t *testing.T, tl *testLog, size int64) {
			plantFile(t, segmentName(tl.path, 1), size, nil)
		},
		check: func(t *testing.T, tl *testLog, size int64, v verdict) {
			if !v.ok || v.damaged || v.openErr {
				t.Errorf("%+v, want a log that verifies and opens", v)
			}
			if _, err := os.Stat(segmentName(tl.path, 1)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the spare segment is still there: %v", err)
			}
		},
	}, {
		name: "segment with bytes far past its start",
		plant: func(t *testing.T, tl *testLog, size int64) {
			plantFile(t, segmentName(tl.path, 1), size, map[int64]string{size / 8 * 5: "records a writer did not put there"})
		},
		check: func(t *testing.T, tl *testLog, size int64, v verdict) {
			if v.ok || !v.damaged {
				t.Errorf("%+v, want a log that fails verification and that opening refuses", v)
			}
			if fi, err := os.Stat(segmentName(tl.path, 1)); err != nil || fi.Size() != size {
				t.Errorf("the segment was not kept: %v", err)
			}
		},
	}, {
		name: "free space of the log's file grown",
		plant: func(t *testing.T, tl *testLog, size int64) {
			growFile(t, tl.path, size, nil)
		},
		check: func(t *testing.T, tl *testLog, size int64, v verdict) {
			if !v.ok || v.damaged || v.openErr {
				t.Errorf("%+v, want a log that verifies and opens", v)
			}
		},
	}, {
		name: "bytes at the end of the log's file grown",
		plant: func(t *testing.T, tl *testLog, size int64) {
			growFile(t, tl.path, size, map[int64]string{size - 3: "end"})
		},
		check: func(t *testing.T, tl *testLog, size int64, v verdict) {
			if v.ok || !v.damaged {
				t.Errorf("%+v, want a log that fails verification and that opening refuses", v)
			}
		},
	}, {
		name: "torn write then a zero segment",
		plant: func(t *testing.T, tl *testLog, size int64) {
			// Half a record where the free space of the first file starts.
			b := tl.bytes(t)
			sp := spans(t, b)
			last := sp[len(sp)-1]
			f, err := os.OpenFile(tl.path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt(b[last.off:last.off+last.size/2], int64(len(b))); err != nil {
				t.Fatal(err)
			}
			plantFile(t, segmentName(tl.path, 1), size, nil)
		},
		check: func(t *testing.T, tl *testLog, size int64, v verdict) {
			if !v.ok || !v.torn || v.damaged || v.openErr {
				t.Errorf("%+v, want a log with a torn write that opens", v)
			}
		},
	}, {
		name: "torn write then a segment with bytes far in",
		plant: func(t *testing.T, tl *testLog, size int64) {
			b := tl.bytes(t)
			sp := spans(t, b)
			last := sp[len(sp)-1]
			f, err := os.OpenFile(tl.path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt(b[last.off:last.off+last.size/2], int64(len(b))); err != nil {
				t.Fatal(err)
			}
			plantFile(t, segmentName(tl.path, 1), size, map[int64]string{size - 5: "bytes"})
		},
		check: func(t *testing.T, tl *testLog, size int64, v verdict) {
			if v.ok || !v.damaged {
				t.Errorf("%+v, want a log that fails verification and that opening refuses", v)
			}
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var want verdict
			for _, size := range []int64{2 << 20, sparseSize} {
				tl := writtenLog(t)
				c.plant(t, tl, size)
				v := judge(t, tl, 10*time.Second)
				c.check(t, tl, size, v)
				if size == 2<<20 {
					want = v
				} else if v != want {
					t.Errorf("a file of %d bytes: %+v; one of %d bytes: %+v", size, v, 2<<20, want)
				}
			}
		})
	}
}

// A file of zeros, or a header a crash cut short followed by zeros, is a
// new log's: opening starts the log in it, one segment's size as for a
// file that was not there, however large the file was.
func TestSparseFileAsANewLog(t *testing.T) {
	for _, torn := range []bool{false, true} {
		name := "zeros"
		if torn {
			name = "torn header"
		}
		t.Run(name, func(t *testing.T) {
			var head []byte
			if torn {
				head = writtenLog(t).bytes(t)[:40]
			}
			for _, size := range []int64{2 << 20, 4 << 30} {
				tl := newTestSetup(t)
				plantFile(t, tl.path, size, map[int64]string{0: string(head)})
				var r *Report
				within(t, 10*time.Second, "verify", func() { r = tl.verify(t) })
				if r.OK || r.Failure.Kind != FindingNoHeader {
					t.Fatalf("a file of %d bytes: %s, want no header", size, describe(r))
				}
				within(t, 10*time.Second, "open", func() {
					l := tl.open(t)
					mustAppend(t, l, ev(EventSign, "R1"))
					if err := l.Close(); err != nil {
						t.Error(err)
					}
				})
				if r := tl.verify(t); !r.OK {
					t.Fatalf("a file of %d bytes, opened: %s", size, describe(r))
				}
				var st syscall.Stat_t
				if err := syscall.Stat(tl.path, &st); err != nil {
					t.Fatal(err)
				}
				if st.Size > maxSegmentSize || st.Blocks*512 > 2*maxSegmentSize {
					t.Errorf("a file of %d bytes, opened: %d bytes long, %d on disk; want at most a segment's", size, st.Size, st.Blocks*512)
				}
				if torn {
					fi, err := os.Stat(tl.path + ".torn-0")
					if err != nil || fi.Size() < int64(len(head)) || fi.Size() > 2*maxWrite {
						t.Errorf("a file of %d bytes, the torn header saved: %v, %v", size, fi, err)
					}
				}
			}
		})
	}
}
