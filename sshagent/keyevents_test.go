package sshagent

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
)

// keyLog is the audit log of a test agent's key events; while fail is
// set, nothing can be written.
type keyLog struct {
	mu     sync.Mutex
	events []audit.Event
	fail   error
}

func (l *keyLog) record(ev audit.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail != nil {
		return l.fail
	}
	l.events = append(l.events, ev)
	return nil
}

func (l *keyLog) failing(err error) {
	l.mu.Lock()
	l.fail = err
	l.mu.Unlock()
}

// take returns the events recorded since it was last called.
func (l *keyLog) take() []audit.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	evs := l.events
	l.events = nil
	return evs
}

func newKey(t *testing.T) (ed25519.PrivateKey, string) {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := ssh.NewPublicKey(k.Public())
	return k, ssh.FingerprintSHA256(pub)
}

// Every change a client makes to the agent's keys is in the audit log,
// with the key, the run whose socket added it, who asked and the add's
// constraints; an add that cannot be recorded does not happen, a
// removal always does.
func TestKeyChangesRecorded(t *testing.T) {
	log := &keyLog{}
	ts := startServerWith(t, func(s *Server) { s.Record = log.record })
	person, _ := ts.client(t)
	run := ts.runClient(t, "R1")
	me := "pid=" + strconv.Itoa(os.Getpid()) + " "

	k1, fp1 := newKey(t)
	if err := person.Add(agent.AddedKey{PrivateKey: k1, Comment: "first \x1b[2J", ConfirmBeforeUse: true, LifetimeSecs: 600}); err != nil {
		t.Fatal(err)
	}
	evs := log.take()
	if len(evs) != 1 {
		t.Fatalf("an add recorded %d events: %+v", len(evs), evs)
	}
	ev := evs[0]
	expires, _ := time.Parse(time.RFC3339, ev.Detail["expires"])
	if ev.Type != audit.EventAgentKeyAdded || ev.Key != fp1 || ev.Run != "" || !strings.HasPrefix(ev.Approver, me) ||
		ev.Detail["comment"] != "first \x1b[2J" || ev.Detail["confirm"] != "yes" || time.Until(expires) < 590*time.Second {
		t.Fatalf("the add's event: %+v", ev)
	}

	k2, fp2 := newKey(t)
	if err := run.Add(agent.AddedKey{PrivateKey: k2}); err != nil {
		t.Fatal(err)
	}
	if evs := log.take(); len(evs) != 1 || evs[0].Key != fp2 || evs[0].Run != "R1" || evs[0].Detail != nil {
		t.Fatalf("a run's add: %+v", evs)
	}
	// A comment far longer than an event's field fits in an event, cut.
	k4, _ := newKey(t)
	if err := person.Add(agent.AddedKey{PrivateKey: k4, Comment: strings.Repeat("c", 100<<10)}); err != nil {
		t.Fatal(err)
	}
	if evs := log.take(); len(evs) != 1 || len(evs[0].Detail["comment"]) > 1100 || !strings.HasSuffix(evs[0].Detail["comment"], " bytes)") {
		t.Fatalf("a long comment's events: %d, the first %.200v", len(evs), evs)
	}
	pub4, _ := ssh.NewPublicKey(k4.Public())
	if err := person.Remove(pub4); err != nil || len(log.take()) != 1 {
		t.Fatalf("removing the key with a long comment: %v", err)
	}

	// Unrecorded, an add is refused and the key is not held.
	log.failing(errors.New("disk full"))
	k3, fp3 := newKey(t)
	if err := person.Add(agent.AddedKey{PrivateKey: k3}); err == nil {
		t.Fatal("an add that could not be recorded succeeded")
	}
	ids, _ := ts.srv.Keys.Identities()
	for _, id := range ids {
		if id.Fingerprint() == fp3 {
			t.Fatal("the unrecorded key is held")
		}
	}
	if len(ids) != 2 {
		t.Fatalf("after an unrecorded add the agent holds %d keys, want 2", len(ids))
	}
	// Unrecorded, a removal happens all the same.
	pub1, _ := ssh.NewPublicKey(k1.Public())
	if err := person.Remove(pub1); err != nil {
		t.Fatalf("a removal the log could not record: %v", err)
	}
	log.failing(nil)
	if evs := log.take(); len(evs) != 0 {
		t.Fatalf("a failing log kept %+v", evs)
	}

	if err := run.RemoveAll(); err != nil {
		t.Fatal(err)
	}
	evs = log.take()
	if len(evs) != 1 || evs[0].Type != audit.EventAgentKeyRemoved || evs[0].Key != fp2 || evs[0].Run != "R1" ||
		evs[0].Reason != audit.ReasonRemoved || !strings.HasPrefix(evs[0].Approver, me) {
		t.Fatalf("a run's ssh-add -D: %+v", evs)
	}
	if held, _ := person.List(); len(held) != 0 {
		t.Fatalf("%d keys left", len(held))
	}
}

// A key whose lifetime ends is reported, and SIGUSR1's wipe removes
// every added key even while the agent is locked.
func TestKeysDroppedReported(t *testing.T) {
	gone := make(chan []*Identity, 1)
	keys := &Keyring{Expired: func(ids []*Identity) { gone <- ids }}
	k, fp := newKey(t)
	id, err := NewIdentity(k, nil, "short")
	if err != nil {
		t.Fatal(err)
	}
	id.Expires = time.Now().Add(20 * time.Millisecond)
	if err := keys.Add(id); err != nil {
		t.Fatal(err)
	}
	select {
	case ids := <-gone:
		if len(ids) != 1 || ids[0].Fingerprint() != fp {
			t.Fatalf("expired: %v", ids)
		}
		if ev := KeyEvent(audit.EventAgentKeyRemoved, ids[0], audit.ReasonExpired); ev.Key != fp || ev.Detail["comment"] != "short" {
			t.Fatalf("its event: %+v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a key's lifetime ended unreported")
	}

	k2, fp2 := newKey(t)
	id2, _ := NewIdentity(k2, nil, "kept")
	if err := keys.Add(id2); err != nil {
		t.Fatal(err)
	}
	keys.SetLocked(true)
	if ids := keys.Wipe(); len(ids) != 1 || ids[0].Fingerprint() != fp2 {
		t.Fatalf("wiped while locked: %v", ids)
	}
	keys.SetLocked(false)
	if ids, _ := keys.Identities(); len(ids) != 0 {
		t.Fatalf("after the wipe and an unlock, %d keys", len(ids))
	}
}

// A run adds keys at a pace (each add is a durable record): a burst,
// then one a second; past it an add is refused, recorded nowhere, and
// the private key it carried is cleared at once. The person's sockets
// are not paced.
func TestRunAddsPaced(t *testing.T) {
	log := &keyLog{}
	ts := startServerWith(t, func(s *Server) { s.Record, s.Log = log.record, discardLogger() })
	person, _ := ts.client(t)
	run := ts.runClient(t, "R1")
	for i := range runAddBurst {
		k, _ := newKey(t)
		if err := run.Add(agent.AddedKey{PrivateKey: k}); err != nil {
			t.Fatalf("the run's add %d: %v", i+1, err)
		}
		pub, _ := ssh.NewPublicKey(k.Public())
		if err := run.Remove(pub); err != nil {
			t.Fatal(err)
		}
	}
	k, _ := newKey(t)
	if err := run.Add(agent.AddedKey{PrivateKey: k}); err == nil {
		t.Fatalf("the run added key %d at once", runAddBurst+1)
	}
	if evs := log.take(); len(evs) != 2*runAddBurst {
		t.Fatalf("%d events for %d adds and removes", len(evs), runAddBurst)
	}
	if err := person.Add(agent.AddedKey{PrivateKey: k}); err != nil {
		t.Fatalf("the person's add while the run is past its pace: %v", err)
	}

	pub := k.Public().(ed25519.PublicKey)
	msg := append([]byte{0, 0, 0, 0, msgAddIdentity}, ssh.Marshal(struct {
		Type      string
		Pub, Priv []byte
		Comment   string
	}{ssh.KeyAlgoED25519, pub, k, "refused"})...)
	cn := &conn{srv: ts.srv, ep: &Endpoint{Channel: approvals.Channel{Kind: approvals.ChannelRun, Run: "R1"}}, ctx: context.Background()}
	cn.log = connLog{cn}
	if reply := process(cn, msg); reply[4] != msgFailure {
		t.Fatalf("an add past the pace answered %x", reply)
	}
	if bytes.Contains(msg, k.Seed()) {
		t.Fatal("the refused add's private key is still in its buffer")
	}
}
