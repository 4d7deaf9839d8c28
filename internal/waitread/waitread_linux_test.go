package waitread

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// blockingPipe returns a pipe whose read end is in blocking mode, as a
// command's inherited standard input is: Go reads such a file with
// read(2) in the goroutine's thread.
func blockingPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

func TestReadsWhatComesAndTheEnd(t *testing.T) {
	r, w := blockingPipe(t)
	rd := Reader(r)
	if rd == io.Reader(r) {
		t.Fatal("a blocking pipe is read as it is")
	}
	defer rd.(io.Closer).Close()
	want := bytes.Repeat([]byte("deny C0123abcd\n"), 10000) // more than a pipe holds
	go func() {
		w.Write(want)
		w.Close()
	}()
	got, err := io.ReadAll(rd)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes (want %d), err %v", len(got), len(want), err)
	}
	if n, err := rd.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("a read after the end: %d %v", n, err)
	}
}

func TestLeavesTheDescriptorBlocking(t *testing.T) {
	r, _ := blockingPipe(t)
	rd := Reader(r)
	defer rd.(io.Closer).Close()
	flags, err := unix.FcntlInt(r.Fd(), unix.F_GETFL, 0)
	if err != nil {
		t.Fatal(err)
	}
	if flags&unix.O_NONBLOCK != 0 {
		t.Fatal("the inherited descriptor was made non-blocking, for every process that shares it")
	}
}

func TestRegularFileIsReadAsItIs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "answers")
	if err := os.WriteFile(path, []byte("once C1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if rd := Reader(f); rd != io.Reader(f) {
		t.Fatalf("a regular file got a %T", rd)
	}
}

// TestWaitsInThePoller: while nothing comes, the reading goroutine waits
// in the runtime's poller ("IO wait"), not in read(2) ("syscall"), where
// it would keep its processor from the poller (see the package
// documentation).
func TestWaitsInThePoller(t *testing.T) {
	r, w := blockingPipe(t)
	rd := Reader(r)
	defer rd.(io.Closer).Close()
	got := make(chan string, 1)
	go func() {
		b := make([]byte, 16)
		n, _ := readAnswer(rd, b)
		got <- string(b[:n])
	}()
	state := ""
	for state == "" {
		runtime.Gosched()
		time.Sleep(time.Millisecond)
		state = waitState("waitread.readAnswer")
	}
	if state != "IO wait" {
		t.Fatalf("the reader waits in state %q, not in the runtime's poller", state)
	}
	w.Write([]byte("once C1\n"))
	if s := <-got; s != "once C1\n" {
		t.Fatalf("read %q", s)
	}
}

// readAnswer is a frame the waiting goroutine's stack can be found by.
//
//go:noinline
func readAnswer(r io.Reader, b []byte) (int, error) { return r.Read(b) }

// waitState returns the state of the goroutine whose stack holds fn, once
// it waits ("IO wait" or "syscall"), or "" while it does not.
func waitState(fn string) string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if !strings.Contains(g, fn) {
			continue
		}
		head, _, _ := strings.Cut(g, "\n")
		for _, s := range []string{"IO wait", "syscall"} {
			if strings.Contains(head, "["+s) {
				return s
			}
		}
	}
	return ""
}
