package keychain

// The service's own prompts, and their answers.

import (
	"errors"
	"fmt"
	"sync"
	"time"

	dbus "github.com/godbus/dbus/v5"

	"github.com/postern/postern/internal/sessionbus"
)

const promptIface = "org.freedesktop.Secret.Prompt"

// promptTimeout bounds the wait for a person to answer the service's
// own prompt (to unlock a collection, say); the prompt is then
// dismissed.
var promptTimeout = 2 * time.Minute

// answers sifts the connection's signals on the D-Bus library's reader,
// as they come: any program on the bus can send this connection signals,
// as many as it likes, and the bus daemon stamps each with its sender.
// Only the Completed signal of the prompt awaited, from the service's
// owner, is kept. One prompt is awaited at a time; an answer to an
// earlier one, come late (the service sends it to the client alone,
// whatever it subscribed to), is dropped too.
type answers struct {
	mu sync.Mutex
	// awaited is the prompt whose answer is kept, from the sender from.
	awaited   dbus.ObjectPath
	from      string
	ended     bool
	completed chan *dbus.Signal // closed when the connection ends
}

// await makes the prompt at path, of the service whose unique bus name is
// from, the one whose answer is kept ("": none), and drops any answer
// kept before.
func (a *answers) await(path dbus.ObjectPath, from string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.awaited, a.from = path, from
	if a.ended {
		return
	}
	select {
	case <-a.completed:
	default:
	}
}

func (a *answers) DeliverSignal(_, _ string, sig *dbus.Signal) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ended || a.awaited == "" || sig.Path != a.awaited || sig.Sender != a.from || sig.Name != promptIface+".Completed" {
		return
	}
	select {
	case a.completed <- sig:
	default:
	}
}

// Terminate is called when the connection closes.
func (a *answers) Terminate() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.ended {
		a.ended = true
		close(a.completed)
	}
}

// prompt shows the service's prompt at path, unless it is noPrompt, and
// waits for it to complete: ErrDismissed if it was dismissed, an error if
// no answer came within promptTimeout (the prompt is then dismissed).
// Only the service's own signal about that prompt counts.
func (s *secrets) prompt(path dbus.ObjectPath) error {
	if path == noPrompt || path == "" {
		return nil
	}
	s.answers.await(path, s.owner)
	defer s.answers.await("", "")
	match := []dbus.MatchOption{dbus.WithMatchSender(s.owner), dbus.WithMatchObjectPath(path), dbus.WithMatchInterface(promptIface), dbus.WithMatchMember("Completed")}
	ctx, cancel := sessionbus.CallContext()
	defer cancel()
	if err := s.conn.AddMatchSignalContext(ctx, match...); err != nil {
		return fmt.Errorf("subscribing to the prompt's answer: %w", err)
	}
	defer func() {
		ctx, cancel := sessionbus.CallContext()
		defer cancel()
		s.conn.RemoveMatchSignalContext(ctx, match...)
	}()
	if err := s.call(path, promptIface+".Prompt", []any{""}); err != nil {
		return fmt.Errorf("showing the keychain's prompt: %w", err)
	}
	timeout := time.NewTimer(promptTimeout)
	defer timeout.Stop()
	select {
	case sig, ok := <-s.answers.completed:
		if !ok {
			return errors.New("the session bus went away while the keychain's prompt was up")
		}
		var (
			dismissed bool
			result    dbus.Variant
		)
		if err := dbus.Store(sig.Body, &dismissed, &result); err != nil {
			return fmt.Errorf("the keychain's prompt answered that is not a completion: %w", err)
		}
		if dismissed {
			return ErrDismissed
		}
		return nil
	case <-timeout.C:
		s.call(path, promptIface+".Dismiss", nil)
		return fmt.Errorf("%w: it had no answer in %v", ErrDismissed, promptTimeout)
	}
}
