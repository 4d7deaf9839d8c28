// Package notify shows desktop notifications through the freedesktop.org
// notification service (org.freedesktop.Notifications on the session
// bus) and reports the actions a person invokes on them.
//
// The session bus is found and reached through package sessionbus: never
// launched, and used only through a UNIX socket whose daemon runs as this
// user, since the bus daemon is what names the process behind each
// sender. A [Service] keeps one private connection and makes a new one
// when the bus went away.
//
// An action counts only when the signal that reports it comes from the
// bus name that owns org.freedesktop.Notifications, both when the
// notification was shown and when the action arrives: the bus daemon
// stamps every signal with its sender's unique name, so a program that
// merely connects to the bus cannot speak for the notification service.
// Any program on the bus can also send signals to the connection, as
// many as it likes, and the D-Bus library holds a goroutine for each
// one its reader has no room for, delivered in no particular order:
// the signals are sifted on the reader itself, in order and without
// waiting, those of other senders dropped as they come, and the
// service's own handled in turn apart, at most ownerQueue waiting.
// The owner's process id, from the bus daemon, is passed on with the
// action so that the caller can check where the answer comes from.
package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	dbus "github.com/godbus/dbus/v5"

	"github.com/postern/postern/internal/sessionbus"
)

// The notification service's well-known name, object and interface.
const (
	ServiceName = "org.freedesktop.Notifications"
	objectPath  = dbus.ObjectPath("/org/freedesktop/Notifications")
	iface       = "org.freedesktop.Notifications"
)

// ErrNoService reports that nothing owns the notification service.
var ErrNoService = errors.New("no desktop notification service on the session bus (nothing owns " + ServiceName + ")")

// Action is a button on a notification.
type Action struct {
	Key   string // reported back when invoked
	Label string // shown
}

// Note is a notification to show. Summary and Body are shown as given:
// the caller escapes what a requester controls. Body is also escaped for
// services that read markup.
type Note struct {
	App     string
	Summary string
	Body    string
	Actions []Action
	Timeout time.Duration // 0: the service decides
	// Critical asks the service to keep the notification until it is
	// answered or closed.
	Critical bool
}

// Invoked is an action a person chose on a notification.
type Invoked struct {
	Action string
	Sender string // the unique bus name that sent the signal
	PID    int    // its process id, from the bus daemon
}

// Status describes the notification service as found now.
type Status struct {
	Owner        string   // unique name owning the service
	PID          int      // its process id
	Server       string   // name and version it reports
	Capabilities []string // "actions", "body-markup", ...
}

// Actions reports whether the service shows action buttons.
func (s Status) Actions() bool { return slices.Contains(s.Capabilities, "actions") }

// Service shows notifications on one session bus.
type Service struct {
	addr string
	log  *slog.Logger

	mu    sync.Mutex
	conn  *dbus.Conn
	shown map[uint32]*shown

	// showing is held for reading across each Notify call, until its id
	// is in shown, and taken by the signals' handler before it reads
	// shown: a signal about a new id waits for it to be noted, and
	// nothing else waits for a service slow to show (mu is not held).
	showing sync.RWMutex

	// owner is the unique name last found owning the service: signals
	// from any other sender are dropped unread.
	owner atomic.Pointer[string]
	// forgedLogged is when a signal from another sender was last logged
	// (unix ns).
	forgedLogged atomic.Int64
	// activateFailed is when the bus last failed to start the service
	// (unix ns), 0 when it did not.
	activateFailed atomic.Int64
}

type shown struct {
	owner    string
	onAction func(Invoked)
	closed   chan struct{}
}

// New returns a service for the bus at addr (see [Address]); it connects
// when first used.
func New(addr string, log *slog.Logger) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{addr: addr, log: log, shown: map[uint32]*shown{}}
}

// connection returns the live connection, making one if needed.
func (s *Service) connection() (*dbus.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil && s.conn.Connected() {
		return s.conn, nil
	}
	if s.addr == "" {
		return nil, sessionbus.ErrNoBus
	}
	// The handshake and the subscription have sessionbus.CallTimeout, as
	// every call has: a bus that takes the connection and never answers
	// (a stopped daemon) must not hold the service, and each card that
	// asks whether it is there.
	sv := &sieve{s: s, owned: make(chan *dbus.Signal, ownerQueue)}
	conn, err := sessionbus.Connect(s.addr, sessionbus.CallTimeout, dbus.WithSignalHandler(sv))
	if err != nil {
		return nil, err
	}
	match := []dbus.MatchOption{dbus.WithMatchInterface(iface), dbus.WithMatchObjectPath(objectPath)}
	ctx, cancel := sessionbus.CallContext()
	defer cancel()
	if err := conn.AddMatchSignalContext(ctx, match...); err != nil {
		conn.Close()
		return nil, fmt.Errorf("subscribing to the notification service's signals: %w", err)
	}
	s.conn = conn
	// Notifications shown on an earlier connection can no longer report.
	for id, sh := range s.shown {
		delete(s.shown, id)
		close(sh.closed)
	}
	go s.signals(conn, sv.owned)
	return conn, nil
}

// Close closes the connection.
func (s *Service) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		return nil
	}
	err := s.conn.Close()
	s.conn = nil
	return err
}

// ownerOf returns the unique name that owns the service now, having the
// bus start it when none does (activate), and notes it as the one whose
// signals are read.
func (s *Service) ownerOf(conn *dbus.Conn) (string, error) {
	name, err := owner(conn)
	if err != nil {
		name, err = s.activate(conn)
	}
	if err == nil {
		s.owner.Store(&name)
	}
	return name, err
}

// activateAgain spaces the bus's attempts to start a service that did
// not start: each may take as long as a call may.
const activateAgain = time.Minute

// activate asks the bus to start the notification service a service
// file of its names (dunst and mako install one, and run from the first
// notification, as notify-send starts them), and returns its owner. A
// service the bus could not start is not asked for again before
// activateAgain has passed.
func (s *Service) activate(conn *dbus.Conn) (string, error) {
	if last := s.activateFailed.Load(); last != 0 && time.Since(time.Unix(0, last)) < activateAgain {
		return "", ErrNoService
	}
	ctx, cancel := sessionbus.CallContext()
	defer cancel()
	var names []string
	if conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.ListActivatableNames", 0).Store(&names) != nil || !slices.Contains(names, ServiceName) {
		return "", ErrNoService
	}
	var started uint32
	if err := conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.StartServiceByName", 0, ServiceName, uint32(0)).Store(&started); err != nil {
		s.activateFailed.Store(time.Now().UnixNano())
		return "", fmt.Errorf("%w; the bus could not start the one its service file names: %w", ErrNoService, err)
	}
	s.activateFailed.Store(0)
	return owner(conn)
}

// owner returns the unique name that owns the service now.
func owner(conn *dbus.Conn) (string, error) {
	ctx, cancel := sessionbus.CallContext()
	defer cancel()
	var name string
	err := conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.GetNameOwner", 0, ServiceName).Store(&name)
	if err != nil {
		return "", ErrNoService
	}
	return name, nil
}

// pidOf asks the bus daemon for the process id behind a unique name.
func pidOf(conn *dbus.Conn, name string) (int, error) {
	ctx, cancel := sessionbus.CallContext()
	defer cancel()
	var pid uint32
	err := conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.GetConnectionUnixProcessID", 0, name).Store(&pid)
	return int(pid), err
}

// Status finds the service: who owns it, its process, what it is and
// what it can do. It returns sessionbus.ErrNoBus or ErrNoService when
// there is none.
func (s *Service) Status() (Status, error) {
	conn, err := s.connection()
	if err != nil {
		return Status{}, err
	}
	var st Status
	if st.Owner, err = s.ownerOf(conn); err != nil {
		return st, err
	}
	st.PID, _ = pidOf(conn, st.Owner)
	obj := conn.Object(st.Owner, objectPath)
	ctx, cancel := sessionbus.CallContext()
	defer cancel()
	if st.Capabilities, err = capabilities(ctx, obj); err != nil {
		return st, fmt.Errorf("the notification service does not answer: %w", err)
	}
	var name, vendor, version, spec string
	if obj.CallWithContext(ctx, iface+".GetServerInformation", 0).Store(&name, &vendor, &version, &spec) == nil {
		st.Server = strings.TrimSpace(name + " " + version)
	}
	return st, nil
}

// Show shows n and calls onAction (from another goroutine) for an
// action invoked on it by the service's owner. The notification is
// withdrawn when ctx ends; the returned channel closes when the service
// closed it (or the bus went away).
func (s *Service) Show(ctx context.Context, n Note, onAction func(Invoked)) (<-chan struct{}, error) {
	conn, err := s.connection()
	if err != nil {
		return nil, err
	}
	own, err := s.ownerOf(conn)
	if err != nil {
		return nil, err
	}
	var actions []string
	for _, a := range n.Actions {
		actions = append(actions, a.Key, a.Label)
	}
	urgency := byte(1)
	if n.Critical {
		urgency = 2
	}
	hints := map[string]dbus.Variant{"urgency": dbus.MakeVariant(urgency)}
	timeout := int32(-1)
	if n.Timeout > 0 {
		// In milliseconds, in 32 bits: a longer one asks for the longest.
		timeout = int32(min(n.Timeout/time.Millisecond, math.MaxInt32))
	}
	cctx, cancel := sessionbus.CallContext()
	defer cancel()
	// The body is escaped for a service that reads markup in it; one
	// that does not shows it as it is (an escape would show as "&lt;").
	// A service that cannot say is taken to read markup.
	body := n.Body
	if caps, err := capabilities(cctx, conn.Object(own, objectPath)); err != nil || slices.Contains(caps, "body-markup") {
		body = escapeMarkup(body)
	}
	sh := &shown{owner: own, onAction: onAction, closed: make(chan struct{})}
	s.showing.RLock()
	var id uint32
	err = conn.Object(own, objectPath).CallWithContext(cctx, iface+".Notify", 0,
		n.App, uint32(0), "", n.Summary, body, actions, hints, timeout).Store(&id)
	if err == nil {
		s.mu.Lock()
		if s.conn == conn {
			s.shown[id] = sh
		} else {
			// The bus went meanwhile: it can no longer report.
			close(sh.closed)
		}
		s.mu.Unlock()
	}
	s.showing.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("showing a notification: %w", err)
	}
	go func() {
		select {
		case <-ctx.Done():
			s.withdraw(conn, id, sh)
		case <-sh.closed:
		}
	}()
	return sh.closed, nil
}

// withdraw closes notification id, if it is still shown.
func (s *Service) withdraw(conn *dbus.Conn, id uint32, sh *shown) {
	s.mu.Lock()
	if s.shown[id] != sh {
		s.mu.Unlock()
		return
	}
	delete(s.shown, id)
	close(sh.closed)
	s.mu.Unlock()
	ctx, cancel := sessionbus.CallContext()
	defer cancel()
	conn.Object(sh.owner, objectPath).CallWithContext(ctx, iface+".CloseNotification", 0, id)
}

// capabilities asks the notification service obj what it can do
// ("actions", "body-markup", ...).
func capabilities(ctx context.Context, obj dbus.BusObject) ([]string, error) {
	var caps []string
	err := obj.CallWithContext(ctx, iface+".GetCapabilities", 0).Store(&caps)
	return caps, err
}

// escapeMarkup escapes the characters the notification body markup
// gives meaning to.
func escapeMarkup(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
