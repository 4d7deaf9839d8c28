package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/bastion"
	"github.com/postern/postern/bastion/journal"
	"github.com/postern/postern/bastion/journal/journaltest"
	"github.com/postern/postern/gateway/api"
)

// startBastionGateway starts a gateway with the bastion enabled; damage,
// when not nil, damages the journal file before the gateway starts.
func startBastionGateway(t *testing.T, damage func(path string)) (*Gateway, string, string) {
	t.Helper()
	var journalPath, bastionSock string
	g, sock := startGatewayWith(t, func(dir string) {
		bastionSock = filepath.Join(dir, "xdg_runtime_dir", "bastion.sock")
		cfg := configFile(t, dir)
		os.WriteFile(cfg, []byte(fmt.Sprintf("[bastion]\nenabled = true\nsocket = %q\n", bastionSock)), 0o600)
		journalPath = filepath.Join(dir, "xdg_state_home", "postern", "journal.db")
		if damage != nil {
			os.MkdirAll(filepath.Dir(journalPath), 0o700)
			j, err := journal.Open(journalPath, "earlier")
			if err != nil {
				t.Fatal(err)
			}
			e := &journal.Entry{Target: journal.Target{User: "u", Host: "h", Port: 22, HostKey: "SHA256:k"}, Kind: journal.KindExec, Command: []byte("make deploy")}
			j.Start(e)
			j.Close()
			damage(journalPath)
		}
	})
	return g, sock, bastionSock
}

// A journal damaged while the gateway was stopped, truncated to nothing
// among others: the gateway starts and serves the agent, the file is kept
// byte for byte, the bastion refuses every command and status says why,
// until a person decides; then the damaged file is kept aside and a new
// journal serves.
func TestDamagedJournalKeptUntilAPersonDecides(t *testing.T) {
	for name, damage := range map[string]func(string){
		"truncated": func(p string) { os.Truncate(p, 0) },
		"garbage":   func(p string) { os.WriteFile(p, bytes.Repeat([]byte("damage"), 4096), 0o600) },
	} {
		t.Run(name, func(t *testing.T) {
			g, sock, bsock := startBastionGateway(t, damage)
			path := g.journal.Load().path
			before, _ := os.ReadFile(path)
			c := api.NewClient(sock)
			ctx := context.Background()
			st, err := c.Status(ctx)
			if err != nil || st.Bastion == nil || st.Bastion.Refusing == "" || !st.Bastion.Damaged {
				t.Fatalf("status: %+v %v", st.Bastion, err)
			}
			if _, err := bastion.Connect(bsock, bastion.Target{User: "u", Host: "h", Port: 22}); err == nil || !strings.Contains(err.Error(), "damaged") {
				t.Fatalf("the bastion served with a damaged journal: %v", err)
			}
			if _, err := c.JournalPage(ctx, api.JournalArgs{}); !api.HasCode(err, api.CodeJournalDamaged) {
				t.Fatalf("journal list: %v", err)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Fatal("the damaged journal was changed")
			}
			res, err := c.NewJournal(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if kept, _ := os.ReadFile(res.KeptAt); !bytes.Equal(kept, before) || !strings.HasPrefix(res.KeptAt, path+".damaged-") {
				t.Fatalf("the damaged journal was not kept at %s", res.KeptAt)
			}
			if st, _ := c.Status(ctx); st.Bastion.Refusing != "" {
				t.Fatalf("status after the decision: %+v", st.Bastion)
			}
			conn, err := bastion.Connect(bsock, bastion.Target{User: "u", Host: "h", Port: 22})
			if err != nil {
				t.Fatalf("the bastion after the decision: %v", err)
			}
			conn.Close()
			if es, err := c.JournalPage(ctx, api.JournalArgs{}); err != nil || len(es) != 0 {
				t.Fatalf("the new journal: %v %v", es, err)
			}
			// The journal's state, not a mistake in the request: a
			// failure, not a usage error.
			if _, err := c.NewJournal(ctx); err == nil || api.HasCode(err, api.CodeUsage) || !strings.Contains(err.Error(), "is not damaged") {
				t.Fatalf("a second decision with a healthy journal: %v", err)
			}
		})
	}
}

// follow is a stream from the gateway with no window: a long command's
// end arrives after hundreds of other entries started and ended.
func TestFollowJournalMissesNothing(t *testing.T) {
	g, sock, _ := startBastionGateway(t, nil)
	j, err := g.readableJournal()
	if err != nil {
		t.Fatal(err)
	}
	c := api.NewClient(sock)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{})
	var (
		mu   sync.Mutex
		seen []string
	)
	done := make(chan error, 1)
	go func() {
		done <- c.FollowJournal(ctx, func() { close(ready) }, func(e *api.JournalEntry) error {
			mu.Lock()
			seen = append(seen, e.ID+" "+e.Status())
			mu.Unlock()
			return nil
		})
	}()
	<-ready
	start := func(cmd string) *journal.Entry {
		e := &journal.Entry{Target: journal.Target{User: "u", Host: "h", Port: 22, HostKey: "SHA256:k"}, Kind: journal.KindExec, Command: []byte(cmd)}
		if err := j.Start(e); err != nil {
			t.Fatal(err)
		}
		if _, err := j.Dispatched(e.ID); err != nil {
			t.Fatal(err)
		}
		return e
	}
	long := start("sleep 3600")
	for i := range 300 {
		e := start(fmt.Sprint("true ", i))
		if _, err := j.End(e.ID, journal.End{Outcome: journal.OutcomeExited}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := j.End(long.ID, journal.End{Outcome: journal.OutcomeExited, ExitStatus: 0}); err != nil {
		t.Fatal(err)
	}
	want := long.ID + " " + journal.StatusCompleted
	deadline := time.Now().Add(time.Minute)
	for {
		mu.Lock()
		n, last := len(seen), ""
		if n > 0 {
			last = seen[n-1]
		}
		mu.Unlock()
		if last == want {
			if n != 2+300*3+1 {
				t.Fatalf("%d changes seen, want %d", n, 2+300*3+1)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the long command's end never arrived (%d changes seen, last %q)", n, last)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("follow: %v", err)
	}
}

// A journal damaged under a running gateway is found out by the next read
// or change: from then on the bastion refuses, and status says why.
func TestJournalDamagedWhileServing(t *testing.T) {
	g, sock, bsock := startBastionGateway(t, nil)
	fillAndScramble(g)
	c := api.NewClient(sock)
	if _, err := c.JournalPage(context.Background(), api.JournalArgs{}); err == nil {
		t.Fatal("a damaged journal was listed")
	}
	if _, err := bastion.Connect(bsock, bastion.Target{User: "u", Host: "h", Port: 22}); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("the bastion served with a damaged journal: %v", err)
	}
	if st, _ := c.Status(context.Background()); st.Bastion.Refusing == "" || !st.Bastion.Damaged {
		t.Fatalf("status: %+v", st.Bastion)
	}
}

// fillAndScramble starts 100 commands in g's journal, then scrambles
// every page of its file past bbolt's meta pages, under the gateway.
func fillAndScramble(g *Gateway) {
	j, _ := g.readableJournal()
	for i := range 100 {
		j.Start(&journal.Entry{Target: journal.Target{User: "u", Host: "h", Port: 22, HostKey: "SHA256:k"}, Kind: journal.KindExec, Command: []byte(fmt.Sprint("command ", i, strings.Repeat(" pad", 60)))})
	}
	b, _ := os.ReadFile(g.journal.Load().path)
	page := os.Getpagesize()
	for i := 2 * page; i < len(b); i++ {
		b[i] = byte(i*7 + 3)
	}
	f, _ := os.OpenFile(g.journal.Load().path, os.O_WRONLY, 0)
	f.WriteAt(b[2*page:], int64(2*page))
	f.Close()
}

// A journal found damaged while it is followed ends the follow, saying
// so: nothing more is committed to it until a person decides, and the
// follower waited on in silence while the bastion refused every command.
func TestFollowEndsWhenTheJournalIsFoundDamaged(t *testing.T) {
	g, sock, _ := startBastionGateway(t, nil)
	c := api.NewClient(sock)
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() {
		done <- c.FollowJournal(context.Background(), func() { close(ready) }, func(*api.JournalEntry) error { return nil })
	}()
	<-ready
	fillAndScramble(g)
	if _, err := c.JournalPage(context.Background(), api.JournalArgs{}); err == nil {
		t.Fatal("a damaged journal was listed")
	}
	select {
	case err := <-done:
		if !api.HasCode(err, api.CodeJournalDamaged) {
			t.Fatalf("the follow of a journal found damaged ended with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the follow of a journal found damaged goes on")
	}
}

// The control socket serves while the journal opens: a reader meanwhile
// finds no journal or the open one, never a half-built state (which made
// "postern journal list" crash the gateway).
func TestJournalReadWhileItOpens(t *testing.T) {
	g := &Gateway{log: slog.New(slog.DiscardHandler), bootID: "b"}
	path := filepath.Join(t.TempDir(), "journal.db")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if j, err := g.readableJournal(); j == nil && err == nil {
				t.Error("neither a journal nor an error")
				return
			}
		}
	}()
	if err := g.openJournal(path, func(*journal.Journal) *bastion.Server { return nil }); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	if j, err := g.readableJournal(); j == nil || err != nil {
		t.Fatalf("after opening: %v %v", j, err)
	}
	g.closeJournal()
	if _, err := g.readableJournal(); err == nil {
		t.Fatal("a closed journal read without an error")
	}
}

// failingLog is an audit log that can no longer be written.
type failingLog struct{}

func (failingLog) Append(audit.Event) error { return errors.New("the audit log cannot be written") }

// Starting a new journal drops the retry guards of the damaged one's
// unknown commands: a person's act, which the audit log records first.
// One it cannot record is not done: the damaged journal stays, and the
// bastion goes on refusing. (The damaged file was moved aside, a new
// journal served, and the record was dropped unsaid.)
func TestJournalNewThatCannotBeRecordedIsNotDone(t *testing.T) {
	g, sock, _ := startBastionGateway(t, func(p string) { os.Truncate(p, 0) })
	g.engine.SetAudit(failingLog{})
	c := api.NewClient(sock)
	ctx := context.Background()
	if res, err := c.NewJournal(ctx); err == nil || !strings.Contains(err.Error(), "audit") {
		t.Fatalf("a new journal the audit log could not record: %+v %v", res, err)
	}
	if st, err := c.Status(ctx); err != nil || st.Bastion == nil || !st.Bastion.Damaged {
		t.Fatalf("status after a new journal that was not recorded: %+v %v", st.Bastion, err)
	}
	if fi, err := os.Stat(g.journal.Load().path); err != nil || fi.Size() != 0 {
		t.Fatalf("the damaged journal is not where it was: %v %v", fi, err)
	}
}

// A journal of long commands (each up to the 256 KiB OpenSSH sends, and
// shown twice, base64 and text) is listed whole: a page is bounded by
// its size as well as by its count, where one page of them was a
// response past what a client reads ("line too long"), built whole in
// the gateway's memory.
func TestJournalListOfLongCommands(t *testing.T) {
	g, sock, _ := startBastionGateway(t, nil)
	j := g.journal.Load().j
	const n = 120
	journaltest.Fill(t, j, n, func(i int) []byte {
		return append(fmt.Appendf(nil, "echo %d ", i), bytes.Repeat([]byte("x"), journal.MaxCommand-16)...)
	})
	got := 0
	err := api.EachJournalEntry(context.Background(), api.NewClient(sock), "", 0, func(*api.JournalEntry) error {
		got++
		return nil
	})
	if err != nil || got != n {
		t.Fatalf("listing %d long commands: %d listed, %v", n, got, err)
	}
}

// Two "postern journal new" at once start one new journal: the second
// finds nothing to replace, where it could pass the damage check before
// the first took the journal's lock and then read the fault the first
// had cleared (a nil dereference that ended the gateway).
func TestJournalNewTwiceAtOnce(t *testing.T) {
	for round := range 40 {
		g, _, _ := startBastionGateway(t, func(p string) { os.Truncate(p, 0) })
		const callers = 8
		var wg sync.WaitGroup
		errs := make(chan error, callers)
		start := make(chan struct{})
		for range callers {
			wg.Go(func() {
				<-start
				_, err := g.replaceJournal()
				errs <- err
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		replaced := 0
		for err := range errs {
			switch {
			case err == nil:
				replaced++
			case !strings.Contains(err.Error(), "not damaged"):
				t.Errorf("round %d: %v", round, err)
			}
		}
		if replaced != 1 {
			t.Fatalf("round %d: %d new journals started by %d callers at once, want 1", round, replaced, callers)
		}
	}
}
