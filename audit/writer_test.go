package audit

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestAppendReadRoundTrip(t *testing.T) {
	tl := newTestSetup(t)
	tl.cfg.CheckpointEvery = 4
	l := tl.open(t)
	want := []Event{
		{Type: EventGatewayStarted, BootID: "B8", VaultEpoch: 16},
		{Type: EventVaultUnlocked, BootID: "B8", VaultEpoch: 17},
		{Type: EventRunRegistered, BootID: "B8", VaultEpoch: 17, Run: "R31", Label: "cleanup",
			Process: &Process{PID: 3988, Exe: "/usr/bin/claude", ExeSHA256: "9f2c1a", UID: 1000, PPID: 3900}},
		{Type: EventSessionApproved, BootID: "B8", VaultEpoch: 17, Run: "R31", Grant: "G1", Key: "SHA256:k",
			Dest: "SHA256:d", DestNames: []string{"prod-db-1"}, Mode: ModeSession, Approver: "tty:/dev/pts/3"},
		{Type: EventSign, BootID: "B8", VaultEpoch: 17, Run: "R31", Grant: "G1", Key: "SHA256:k", Dest: "SHA256:d", Forwarding: true},
		{Type: EventPolicyReloaded, BootID: "B8", VaultEpoch: 17, Detail: map[string]string{"version": "3"}},
	}
	for _, e := range want {
		mustAppend(t, l, e)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(want[0]); !errors.Is(err, ErrClosed) || !errors.Is(err, ErrNotRecorded) {
		t.Fatalf("append after close: %v", err)
	}
	r := tl.verify(t)
	if !r.OK || r.Torn != nil {
		t.Fatalf("verify: %s", describe(r))
	}
	// header, cp0, 4 entries, cp, 2 entries, final cp
	if r.Records != 10 || r.Entries != 6 || r.Checkpoints != 3 || r.UnsealedEntries != 0 {
		t.Fatalf("totals: %+v", r)
	}
	if r.LastCheckpoint == nil || r.LastCheckpoint.Seq != 9 || r.LastCheckpoint.Epoch != 2 || r.LastCheckpoint.MaxUnsealed != 4 {
		t.Fatalf("last checkpoint: %+v", r.LastCheckpoint)
	}
	got, err := ReadEvents(tl.path, tl.setup.Identity)
	if err != nil {
		t.Fatal(err)
	}
	var entries []Event
	for _, e := range got {
		if e.Type != EventCheckpoint {
			entries = append(entries, e)
		}
	}
	if len(entries) != len(want) || len(got) != len(want)+3 {
		t.Fatalf("read %d events (%d entries), want %d entries", len(got), len(entries), len(want))
	}
	for i, e := range entries {
		w := want[i]
		if e.Type != w.Type || e.Run != w.Run || e.Time.IsZero() || e.Seq == 0 || e.VaultEpoch != w.VaultEpoch {
			t.Errorf("event %d: got %+v want %+v", i, e, w)
		}
	}
	if p := entries[2].Process; p == nil || p.PID != 3988 || p.Exe != "/usr/bin/claude" {
		t.Errorf("process facts lost: %+v", p)
	}
	if entries[4].Forwarding != true || entries[3].DestNames[0] != "prod-db-1" || entries[5].Detail["version"] != "3" {
		t.Errorf("fields lost: %+v", entries)
	}
	// Another identity cannot read it.
	other := newTestSetup(t)
	if _, err := ReadEvents(tl.path, other.setup.Identity); err == nil || !strings.Contains(err.Error(), "does not open") {
		t.Fatalf("wrong identity: %v", err)
	}
}

func TestReopenContinuesChain(t *testing.T) {
	tl := newTestSetup(t)
	for round := 0; round < 3; round++ {
		l := tl.open(t)
		for i := 0; i < 5; i++ {
			mustAppend(t, l, ev(EventSign, fmt.Sprintf("R%d", round)))
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	r := tl.verify(t)
	if !r.OK || r.Entries != 15 || r.UnsealedEntries != 0 {
		t.Fatalf("verify: %s %+v", describe(r), r)
	}
	// cp0 at creation and one at each close; reopening a cleanly closed log
	// with the same policy adds none.
	if r.Checkpoints != 4 {
		t.Fatalf("checkpoints = %d, want 4", r.Checkpoints)
	}
	// A changed policy is committed at open.
	tl.cfg.CheckpointEvery = 7
	l := tl.open(t)
	l.Close()
	r = tl.verify(t)
	if !r.OK || r.Checkpoints != 5 || r.LastCheckpoint.MaxUnsealed != 7 {
		t.Fatalf("policy change: %s %+v", describe(r), r.LastCheckpoint)
	}
}

func TestSecondWriterRefused(t *testing.T) {
	tl := newTestSetup(t)
	l := tl.open(t)
	defer l.Close()
	_, err := Open(tl.cfg)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: %v", err)
	}
	if !strings.Contains(err.Error(), "another") {
		t.Fatalf("unclear error: %v", err)
	}
	mustAppend(t, l, ev(EventSign, "R1"))
}

func TestCheckpointEveryAndInterval(t *testing.T) {
	tl := newTestSetup(t)
	tl.cfg.CheckpointEvery = 10
	l := tl.open(t)
	for i := 0; i < 25; i++ {
		mustAppend(t, l, ev(EventSign, "R1"))
	}
	// Count-based checkpoints follow the 10th and 20th entry.
	if err := l.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	r := tl.verify(t)
	if !r.OK || r.Checkpoints != 4 || r.UnsealedEntries != 0 {
		t.Fatalf("after Checkpoint: %s checkpoints=%d unsealed=%d", describe(r), r.Checkpoints, r.UnsealedEntries)
	}
	// Nothing unsealed: Checkpoint is a no-op.
	if err := l.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if r2 := tl.verify(t); r2.Records != r.Records {
		t.Fatalf("empty checkpoint written")
	}
	l.Close()

	tl.cfg.CheckpointInterval = 50 * time.Millisecond
	l = tl.open(t)
	defer l.Close()
	mustAppend(t, l, ev(EventSign, "R2"))
	deadline := time.Now().Add(5 * time.Second)
	for {
		r = tl.verify(t)
		if r.UnsealedEntries == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("interval checkpoint not written: %+v", r)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestConcurrentAppendGroupCommit(t *testing.T) {
	tl := newTestSetup(t)
	tl.cfg.CheckpointEvery = 16
	l := tl.open(t)
	var syncs, writes int
	var mu sync.Mutex
	l.w.syncHook = func(f *os.File) error {
		mu.Lock()
		syncs++
		first := syncs == 1
		mu.Unlock()
		if first {
			// The first sync lasts until other appends wait behind it,
			// as they do when they come while it syncs: without that, on
			// one CPU (GOMAXPROCS=1) each append could be written before
			// the next goroutine runs, and no batch would ever hold two.
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				l.w.cmu.Lock()
				waiting := len(l.w.pending)
				l.w.cmu.Unlock()
				if waiting >= 2 {
					break
				}
			}
		}
		return datasync(f)
	}
	const G, N = 32, 40
	var wg sync.WaitGroup
	seqs := make(chan uint64, G*N)
	for g := 0; g < G; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < N; i++ {
				seq, err := l.append(Event{Type: EventSign, Run: fmt.Sprintf("R%d", g), Detail: map[string]string{"i": fmt.Sprint(i)}})
				if err != nil {
					t.Error(err)
					return
				}
				seqs <- seq
			}
		}()
	}
	wg.Wait()
	close(seqs)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	writes = G * N
	mu.Lock()
	t.Logf("%d appends, %d fdatasyncs", writes, syncs)
	if syncs >= writes {
		t.Errorf("no group commit: %d syncs for %d appends", syncs, writes)
	}
	mu.Unlock()
	r := tl.verify(t)
	if !r.OK || r.Entries != G*N {
		t.Fatalf("verify: %s entries=%d", describe(r), r.Entries)
	}
	evs, err := ReadEvents(tl.path, tl.setup.Identity)
	if err != nil {
		t.Fatal(err)
	}
	bySeq := map[uint64]Event{}
	for _, e := range evs {
		bySeq[e.Seq] = e
	}
	for s := range seqs {
		if e, ok := bySeq[s]; !ok || e.Type != EventSign {
			t.Fatalf("seq %d returned by append is not a sign entry", s)
		}
	}
}

func TestWriteFailureFailsClosed(t *testing.T) {
	for _, where := range []string{"write", "sync"} {
		t.Run(where, func(t *testing.T) {
			tl := newTestSetup(t)
			l := tl.open(t)
			mustAppend(t, l, ev(EventSign, "R1"))
			if where == "write" {
				l.w.writeHook = func(f *os.File, b []byte, off int64) (int, error) {
					n, _ := f.WriteAt(b[:len(b)/2], off) // a partial write, then the disk is full
					return n, syscall.ENOSPC
				}
			} else {
				l.w.syncHook = func(*os.File) error { return syscall.EIO }
			}
			err := l.Append(ev(EventSign, "R2"))
			if err == nil || !errors.Is(err, ErrNotRecorded) {
				t.Fatalf("append on failing disk: %v", err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "action not taken") || !strings.Contains(msg, tl.path) {
				t.Fatalf("message does not say the action was not taken: %q", msg)
			}
			t.Log(msg)
			// Sticky: even with the disk back, the log refuses until reopened.
			l.w.writeHook, l.w.syncHook = nil, nil
			if err := l.Append(ev(EventSign, "R3")); !errors.Is(err, ErrNotRecorded) {
				t.Fatalf("append after failure: %v", err)
			}
			if err := l.Checkpoint(); err == nil {
				t.Fatal("checkpoint after failure succeeded")
			}
			if err := l.Close(); err == nil {
				t.Fatal("close after failure reported no error")
			}
			// The partial write was cut: the log verifies and reopens.
			r := tl.verify(t)
			if !r.OK || r.Torn != nil || r.Entries != 1 {
				t.Fatalf("after failure: %s torn=%v entries=%d", describe(r), r.Torn, r.Entries)
			}
			l = tl.open(t)
			mustAppend(t, l, ev(EventSign, "R4"))
			l.Close()
			if r := tl.verify(t); !r.OK || r.Entries != 2 {
				t.Fatalf("after reopen: %s", describe(r))
			}
		})
	}
}

func TestDetectsForeignChanges(t *testing.T) {
	cases := map[string]func(t *testing.T, tl *testLog){
		"appended": func(t *testing.T, tl *testLog) {
			f, err := os.OpenFile(tl.path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write([]byte("junk"))
			f.Close()
		},
		"truncated": func(t *testing.T, tl *testLog) {
			fi, _ := os.Stat(tl.path)
			os.Truncate(tl.path, fi.Size()-10)
		},
		"replaced": func(t *testing.T, tl *testLog) {
			b := tl.bytes(t)
			os.WriteFile(tl.path+".new", b, 0o600)
			os.Rename(tl.path+".new", tl.path)
		},
		"removed": func(t *testing.T, tl *testLog) { os.Remove(tl.path) },
		// The same file, reached through a link the path now is: the
		// next writer to open the path writes where the link leads.
		"linked": func(t *testing.T, tl *testLog) {
			os.Rename(tl.path, tl.path+".aside")
			os.Symlink(tl.path+".aside", tl.path)
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			tl := newTestSetup(t)
			l := tl.open(t)
			mustAppend(t, l, ev(EventSign, "R1"))
			change(t, tl)
			err := l.Append(ev(EventSign, "R2"))
			if !errors.Is(err, ErrNotRecorded) {
				t.Fatalf("append after foreign change: %v", err)
			}
			t.Log(err)
			l.Close()
		})
	}
}

// A record rewritten in place while the writer runs, the last one it
// wrote zeroed or altered, makes the writer refuse: written after it, the
// next records would follow a hole that Verify reads as a torn write, and
// drop, with every checkpoint after it, as a crash's.
func TestDetectsTheLastRecordRewrittenInPlace(t *testing.T) {
	for name, change := range map[string]func(b []byte) ([]byte, int64){
		"zeroed": func(b []byte) ([]byte, int64) {
			from := max(0, len(b)-1024)
			return make([]byte, len(b)-from), int64(from)
		},
		"altered": func(b []byte) ([]byte, int64) {
			return []byte{b[len(b)-1] ^ 1}, int64(len(b) - 1)
		},
	} {
		t.Run(name, func(t *testing.T) {
			tl := newTestSetup(t)
			l := tl.open(t)
			defer l.Close()
			for i := 0; i < 5; i++ {
				mustAppend(t, l, ev(EventSign, "R1"))
			}
			data, off := change(tl.bytes(t))
			f, err := os.OpenFile(tl.path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt(data, off); err != nil {
				t.Fatal(err)
			}
			f.Close()
			if err := l.Append(ev(EventSign, "R2")); !errors.Is(err, ErrNotRecorded) {
				t.Fatalf("append after the last record was %s in place: %v", name, err)
			}
		})
	}
}

func TestOpenRefusesDamage(t *testing.T) {
	tl := newTestSetup(t)
	l := tl.open(t)
	for i := 0; i < 5; i++ {
		mustAppend(t, l, ev(EventSign, "R1"))
	}
	l.Close()
	b := tl.bytes(t)
	sp := spans(t, b)
	b[sp[3].off+60] ^= 1
	os.WriteFile(tl.path, b, 0o600)
	_, err := Open(tl.cfg)
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "seq 3") || !strings.Contains(err.Error(), "move it aside") {
		t.Fatalf("open damaged log: %v", err)
	}
	if after := tl.bytes(t); string(after) != string(b) {
		t.Fatal("open changed a damaged log")
	}
}

func TestOpenChecksKeys(t *testing.T) {
	tl := newTestSetup(t)
	l := tl.open(t)
	mustAppend(t, l, ev(EventSign, "R1"))
	l.Close()

	other := newTestSetup(t)
	cfg := tl.cfg
	cfg.Recipient = other.setup.Recipient
	if _, err := Open(cfg); err == nil || !strings.Contains(err.Error(), "another setup") {
		t.Fatalf("wrong recipient: %v", err)
	}
	cfg = tl.cfg
	cfg.PK0 = other.setup.PK0
	if _, err := Open(cfg); !errors.Is(err, ErrDamaged) {
		t.Fatalf("wrong pk0: %v", err)
	}
	cfg = tl.cfg
	cfg.KeyFile = other.setup.KeyFile
	if _, err := Open(cfg); err == nil || !strings.Contains(err.Error(), "key") {
		t.Fatalf("wrong key file: %v", err)
	}
	cfg = tl.cfg
	cfg.KeyFile = tl.dir + "/missing.key"
	if _, err := Open(cfg); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing key file: %v", err)
	}
	os.Chmod(tl.setup.KeyFile, 0o644)
	if _, err := Open(tl.cfg); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("readable key file: %v", err)
	}
	os.Chmod(tl.setup.KeyFile, 0o600)
	// A log cut to nothing while the key chain moved on.
	os.Truncate(tl.path, 0)
	if _, err := Open(tl.cfg); err == nil || !strings.Contains(err.Error(), "cut back or replaced") {
		t.Fatalf("emptied log: %v", err)
	}
}

// TestKeyFileCrashWindows simulates a crash between appending a checkpoint
// and moving the key file on: the old key file must still continue the chain.
func TestKeyFileCrashWindows(t *testing.T) {
	tl := newTestSetup(t)
	l := tl.open(t)
	mustAppend(t, l, ev(EventSign, "R1"))
	before, err := os.ReadFile(tl.setup.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, ev(EventSign, "R2"))
	l.Close()
	// Crash window: the checkpoint is in the log, the key file is one behind.
	// Close wrote one more checkpoint, so roll the log back to before it too.
	b := tl.bytes(t)
	sp := spans(t, b)
	cut := sp[len(sp)-1].off
	os.WriteFile(tl.path, b[:cut], 0o600)
	os.WriteFile(tl.setup.KeyFile, before, 0o600)
	l, err = Open(tl.cfg)
	if err != nil {
		t.Fatalf("reopen in the crash window: %v", err)
	}
	mustAppend(t, l, ev(EventSign, "R3"))
	l.Close()
	if r := tl.verify(t); !r.OK || r.UnsealedEntries != 0 {
		t.Fatalf("after crash-window recovery: %s", describe(r))
	}
}

func TestClockSteppingBackKeepsCheckpointsMonotonic(t *testing.T) {
	tl := newTestSetup(t)
	base := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	step := 0
	tl.cfg.Now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		step++
		return base.Add(-time.Duration(step) * time.Minute) // always earlier
	}
	tl.cfg.CheckpointEvery = 2
	l := tl.open(t)
	for i := 0; i < 6; i++ {
		mustAppend(t, l, ev(EventSign, "R1"))
	}
	l.Close()
	if r := tl.verify(t); !r.OK {
		t.Fatalf("verify: %s", describe(r))
	}
}

func TestAppendRejectsBadEvents(t *testing.T) {
	tl := newTestSetup(t)
	l := tl.open(t)
	defer l.Close()
	if err := l.Append(Event{}); !errors.Is(err, ErrNotRecorded) {
		t.Fatalf("event without type: %v", err)
	}
	big := Event{Type: EventSign, Detail: map[string]string{"x": strings.Repeat("a", MaxEventSize)}}
	if err := l.Append(big); !errors.Is(err, ErrNotRecorded) || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("oversized event: %v", err)
	}
	// Neither poisons the log.
	mustAppend(t, l, ev(EventSign, "R1"))
	near := Event{Type: EventSign, Detail: map[string]string{"x": strings.Repeat("a", MaxEventSize-100)}}
	mustAppend(t, l, near)
}

func TestHeadAndOnCheckpoint(t *testing.T) {
	tl := newTestSetup(t)
	var anchors []Anchor
	var mu sync.Mutex
	tl.cfg.OnCheckpoint = func(a Anchor) {
		mu.Lock()
		anchors = append(anchors, a)
		mu.Unlock()
	}
	tl.cfg.CheckpointEvery = 3
	l := tl.open(t)
	for i := 0; i < 7; i++ {
		mustAppend(t, l, ev(EventSign, "R1"))
	}
	h := l.Head()
	if h.Seq != 10 || h.LogID != l.LogID() { // header, cp0, 3+cp, 3+cp, 1
		t.Fatalf("head %+v", h)
	}
	l.Close()
	mu.Lock()
	defer mu.Unlock()
	// cp0 (seq 1), two count-based ones (5, 9) and the final one (11).
	if len(anchors) != 4 || anchors[0].Seq != 1 || anchors[3].Seq != 11 {
		t.Fatalf("anchors %+v", anchors)
	}
	b := tl.bytes(t)
	opts := tl.pin()
	opts.Anchors = anchors
	if r := verifyBytes(t, b, opts); !r.OK {
		t.Fatalf("verify with anchors: %s", describe(r))
	}
	// Cutting the last checkpoint is now visible.
	sp := spans(t, b)
	r := verifyBytes(t, b[:sp[len(sp)-1].off], opts)
	expectFailure(t, r, FindingTruncated, uint64(len(sp)-1), sp[len(sp)-1].off)
}
