package keychain

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	dbus "github.com/godbus/dbus/v5"

	"github.com/postern/postern/internal/dbustest"
	"github.com/postern/postern/internal/sessionbus"
)

// promptService is a Secret Service whose default collection is locked:
// an unlock needs a prompt, which answers as answer says. It stands in
// for gnome-keyring, whose prompts need a person at a display. It
// records the calls it gets.
type promptService struct {
	t      *testing.T
	conn   *dbus.Conn
	answer func(client dbus.Sender, prompt dbus.ObjectPath)
	// prompts is how many prompts Unlock made.
	prompts int

	mu    sync.Mutex
	calls []string
}

// promptPath is the path of the service's nth prompt.
func promptPath(n int) dbus.ObjectPath {
	return dbus.ObjectPath(fmt.Sprintf("/org/freedesktop/secrets/prompt/u%d", n))
}

func (p *promptService) record(call string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, call)
}

func (p *promptService) called(call string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.calls {
		if c == call {
			return true
		}
	}
	return false
}

// startPromptService starts a bus with the service on it, points the
// package at it, and returns the service.
func startPromptService(t *testing.T, answer func(p *promptService, client dbus.Sender, prompt dbus.ObjectPath)) *promptService {
	addr := dbustest.Start(t, t.TempDir(), []string{"PATH=" + os.Getenv("PATH")})
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", addr)
	return servePromptService(t, addr, answer)
}

// servePromptService puts the service on the bus at addr.
func servePromptService(t *testing.T, addr string, answer func(p *promptService, client dbus.Sender, prompt dbus.ObjectPath)) *promptService {
	conn, err := sessionbus.Connect(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	p := &promptService{t: t, conn: conn}
	p.answer = func(client dbus.Sender, prompt dbus.ObjectPath) { answer(p, client, prompt) }
	private, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	public := new(big.Int).Exp(oakley2G, private, oakley2).FillBytes(make([]byte, groupSize))
	export := func(path dbus.ObjectPath, iface string, methods map[string]any) {
		if err := conn.ExportMethodTable(methods, path, iface); err != nil {
			t.Fatal(err)
		}
	}
	export(servicePath, serviceIface, map[string]any{
		"OpenSession": func(alg string, _ dbus.Variant) (dbus.Variant, dbus.ObjectPath, *dbus.Error) {
			p.record("OpenSession")
			return dbus.MakeVariant(public), "/org/freedesktop/secrets/session/s1", nil
		},
		"Unlock": func(objects []dbus.ObjectPath) ([]dbus.ObjectPath, dbus.ObjectPath, *dbus.Error) {
			p.record("Unlock")
			p.mu.Lock()
			defer p.mu.Unlock()
			p.prompts++
			return nil, promptPath(p.prompts), nil
		},
	})
	export(defaultCollection, "org.freedesktop.Secret.Collection", map[string]any{
		"CreateItem": func(map[string]dbus.Variant, secret, bool) (dbus.ObjectPath, dbus.ObjectPath, *dbus.Error) {
			p.record("CreateItem")
			return "/org/freedesktop/secrets/collection/login/1", noPrompt, nil
		},
	})
	for n := 1; n <= 3; n++ {
		export(promptPath(n), promptIface, map[string]any{
			"Prompt": func(client dbus.Sender, window string) *dbus.Error {
				p.record("Prompt")
				p.answer(client, promptPath(n)) // before the call's answer

				return nil
			},
			"Dismiss": func() *dbus.Error {
				p.record("Dismiss")
				return nil
			},
		})
	}
	if r, err := conn.RequestName(serviceName, dbus.NameFlagDoNotQueue); err != nil || r != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("taking %s: %v, %v", serviceName, r, err)
	}
	return p
}

// completed sends, from conn to the client alone (as gnome-keyring
// sends it), the prompt's Completed signal.
func completed(t *testing.T, conn *dbus.Conn, client dbus.Sender, prompt dbus.ObjectPath, dismissed bool) {
	msg := &dbus.Message{Type: dbus.TypeSignal, Headers: map[dbus.HeaderField]dbus.Variant{
		dbus.FieldPath:        dbus.MakeVariant(prompt),
		dbus.FieldInterface:   dbus.MakeVariant(promptIface),
		dbus.FieldMember:      dbus.MakeVariant("Completed"),
		dbus.FieldDestination: dbus.MakeVariant(string(client)),
		dbus.FieldSignature:   dbus.MakeVariant(dbus.SignatureOf(false, dbus.Variant{})),
	}, Body: []any{dismissed, dbus.MakeVariant("")}}
	if call := conn.Send(msg, nil); call.Err != nil {
		t.Error(call.Err)
	}
}

// A prompt the person answers lets the call go on; one dismissed fails
// it, and nothing is stored.
func TestPromptAnswered(t *testing.T) {
	for _, dismissed := range []bool{false, true} {
		p := startPromptService(t, func(p *promptService, client dbus.Sender, prompt dbus.ObjectPath) {
			completed(t, p.conn, client, prompt, dismissed)
		})
		err := Store([16]byte{1}, []byte("secret"))
		if dismissed {
			if !errors.Is(err, ErrDismissed) || p.called("CreateItem") {
				t.Errorf("prompt dismissed: %v; item created: %v", err, p.called("CreateItem"))
			}
			continue
		}
		if err != nil || !p.called("Prompt") || !p.called("CreateItem") {
			t.Errorf("prompt answered: %v; calls %v", err, p.calls)
		}
	}
}

// Any program on the bus can send the client a signal that looks like
// the prompt's answer, to it alone. Only the service's own counts: a
// forged "not dismissed" followed by the service's "dismissed" is a
// dismissal, and nothing is stored.
func TestForgedPromptAnswerIgnored(t *testing.T) {
	var forger *dbus.Conn
	p := startPromptService(t, func(p *promptService, client dbus.Sender, prompt dbus.ObjectPath) {
		completed(t, forger, client, prompt, false)
		time.Sleep(200 * time.Millisecond)
		completed(t, p.conn, client, prompt, true)
	})
	var err error
	forger, err = sessionbus.Connect(os.Getenv("DBUS_SESSION_BUS_ADDRESS"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer forger.Close()
	if err := Store([16]byte{1}, []byte("secret")); !errors.Is(err, ErrDismissed) || p.called("CreateItem") {
		t.Fatalf("after a forged answer and the service's dismissal: %v; item created: %v", err, p.called("CreateItem"))
	}
}

// A prompt nobody answers fails the call once promptTimeout has passed,
// and is dismissed.
func TestPromptUnanswered(t *testing.T) {
	defer func(d time.Duration) { promptTimeout = d }(promptTimeout)
	promptTimeout = 300 * time.Millisecond
	p := startPromptService(t, func(*promptService, dbus.Sender, dbus.ObjectPath) {})
	err := Store([16]byte{1}, []byte("secret"))
	if !errors.Is(err, ErrDismissed) || !strings.Contains(err.Error(), "no answer") || p.called("CreateItem") {
		t.Fatalf("unanswered prompt: %v; item created: %v", err, p.called("CreateItem"))
	}
	if !p.called("Dismiss") {
		t.Fatalf("the unanswered prompt was not dismissed; calls %v", p.calls)
	}
}

// An answer to a prompt given up on that comes later (the service sends
// it to the client alone, whatever it subscribed to) is not the answer
// to the next prompt, and does not crowd it out: here it comes while the
// next prompt is up, just before that one's own.
func TestLateAnswerToAnEarlierPrompt(t *testing.T) {
	defer func(d time.Duration) { promptTimeout = d }(promptTimeout)
	promptTimeout = 300 * time.Millisecond
	p := startPromptService(t, func(p *promptService, client dbus.Sender, prompt dbus.ObjectPath) {
		if prompt == promptPath(2) {
			completed(t, p.conn, client, promptPath(1), false)
			completed(t, p.conn, client, prompt, true)
		}
	})
	if err := Store([16]byte{1}, []byte("secret")); err == nil || !strings.Contains(err.Error(), "no answer") {
		t.Fatalf("first prompt, unanswered: %v", err)
	}
	if err := Store([16]byte{1}, []byte("secret")); !errors.Is(err, ErrDismissed) || p.called("CreateItem") {
		t.Fatalf("second prompt, dismissed after a late answer to the first: %v; item created: %v", err, p.called("CreateItem"))
	}
}

// A service that started again since the last call (a new process, with
// another name on the bus) gets the next call: the package keeps its
// connection to the bus, not to the service.
func TestServiceStartedAgain(t *testing.T) {
	answer := func(p *promptService, client dbus.Sender, prompt dbus.ObjectPath) {
		completed(t, p.conn, client, prompt, false)
	}
	first := startPromptService(t, answer)
	if err := Store([16]byte{1}, []byte("secret")); err != nil || !first.called("CreateItem") {
		t.Fatalf("Store with the first service: %v; calls %v", err, first.calls)
	}
	first.conn.Close()
	second := servePromptService(t, os.Getenv("DBUS_SESSION_BUS_ADDRESS"), answer)
	if err := Store([16]byte{1}, []byte("secret")); err != nil || !second.called("CreateItem") {
		t.Fatalf("Store with the service started again: %v; calls %v", err, second.calls)
	}
}

// A bus that stops answering between the Unlock and the subscription to
// its prompt's answer (its AddMatch never answered) fails the call once
// sessionbus.CallTimeout has passed, and no prompt is put up that nothing
// would hear the answer to.
func TestPromptSubscriptionNeverAnswered(t *testing.T) {
	addr := dbustest.Start(t, t.TempDir(), []string{"PATH=" + os.Getenv("PATH")})
	p := servePromptService(t, addr, func(p *promptService, client dbus.Sender, prompt dbus.ObjectPath) {
		completed(t, p.conn, client, prompt, false)
	})
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", dbustest.Withholding(t, addr, "AddMatch"))
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- Store([16]byte{1}, []byte("secret")) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "subscribing to the prompt's answer") {
			t.Fatalf("Store on a bus that never answered the subscription: %v", err)
		}
		if d := time.Since(start); d < sessionbus.CallTimeout {
			t.Fatalf("gave up after %v, before the call's deadline", d)
		}
	case <-time.After(sessionbus.CallTimeout + 30*time.Second):
		t.Fatalf("Store still waits %v after the subscription was sent", sessionbus.CallTimeout+30*time.Second)
	}
	if !p.called("Unlock") || p.called("Prompt") || p.called("CreateItem") {
		t.Fatalf("calls %v: want the Unlock, and no prompt", p.calls)
	}
}
