package keychain

// The calls of the freedesktop Secret Service API this package makes, on
// a connection of its own to the session bus.

import (
	"fmt"

	dbus "github.com/godbus/dbus/v5"

	"github.com/postern/postern/internal/sessionbus"
)

const (
	serviceName  = "org.freedesktop.secrets"
	servicePath  = dbus.ObjectPath("/org/freedesktop/secrets")
	serviceIface = "org.freedesktop.Secret.Service"
	// defaultCollection is where entries are kept (usually "login").
	defaultCollection = dbus.ObjectPath("/org/freedesktop/secrets/aliases/default")
	// noPrompt is the prompt of a call that needs none.
	noPrompt = dbus.ObjectPath("/")
)

// secrets is a connection to the Secret Service.
type secrets struct {
	conn *dbus.Conn
	// owner is the unique bus name of the service's process, which
	// every call goes to.
	owner   string
	answers *answers
}

// connect connects to the session bus at addr.
func connect(addr string) (*secrets, error) {
	a := &answers{completed: make(chan *dbus.Signal, 1)}
	conn, err := sessionbus.Connect(addr, sessionbus.CallTimeout, dbus.WithSignalHandler(a))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return &secrets{conn: conn, answers: a}, nil
}

// findOwner starts the service where the bus can (gnome-keyring is
// often started so) and finds which process owns it now: one that
// started again since the last call has another name.
func (s *secrets) findOwner() error {
	ctx, cancel := sessionbus.CallContext()
	defer cancel()
	var owner string
	err := s.conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.StartServiceByName", 0, serviceName, uint32(0)).Err
	if err == nil {
		err = s.conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.GetNameOwner", 0, serviceName).Store(&owner)
	}
	if err != nil {
		return fmt.Errorf("%w: no Secret Service answers on the session bus (start gnome-keyring-daemon or another provider): %v", ErrUnavailable, err)
	}
	s.owner = owner
	return nil
}

func (s *secrets) close() { s.conn.Close() }

func (s *secrets) obj(path dbus.ObjectPath) dbus.BusObject {
	return s.conn.Object(s.owner, path)
}

// call calls method on the object at path within sessionbus.CallTimeout
// and stores its answer in out.
func (s *secrets) call(path dbus.ObjectPath, method string, args []any, out ...any) error {
	ctx, cancel := sessionbus.CallContext()
	defer cancel()
	return s.obj(path).CallWithContext(ctx, method, 0, args...).Store(out...)
}

// search returns the items of the collection with the attributes.
func (s *secrets) search(collection dbus.ObjectPath, attrs map[string]string) ([]dbus.ObjectPath, error) {
	var items []dbus.ObjectPath
	err := s.call(collection, "org.freedesktop.Secret.Collection.SearchItems", []any{attrs}, &items)
	return items, err
}

// unlock unlocks the objects, through the service's prompt if it needs
// one.
func (s *secrets) unlock(objects ...dbus.ObjectPath) error {
	var (
		unlocked []dbus.ObjectPath
		prompt   dbus.ObjectPath
	)
	if err := s.call(servicePath, serviceIface+".Unlock", []any{objects}, &unlocked, &prompt); err != nil {
		return err
	}
	return s.prompt(prompt)
}

// create stores sec in the collection as an item with the label and
// attributes, replacing one with the same attributes.
func (s *secrets) create(collection dbus.ObjectPath, label string, attrs map[string]string, sec secret) error {
	props := map[string]dbus.Variant{
		"org.freedesktop.Secret.Item.Label":      dbus.MakeVariant(label),
		"org.freedesktop.Secret.Item.Attributes": dbus.MakeVariant(attrs),
	}
	var item, prompt dbus.ObjectPath
	if err := s.call(collection, "org.freedesktop.Secret.Collection.CreateItem", []any{props, sec, true}, &item, &prompt); err != nil {
		return err
	}
	return s.prompt(prompt)
}

// get returns the item's secret, sent in the session.
func (s *secrets) get(item dbus.ObjectPath, sess *session) (secret, error) {
	var sec secret
	err := s.call(item, "org.freedesktop.Secret.Item.GetSecret", []any{sess.path}, &sec)
	return sec, err
}

// delete deletes the item.
func (s *secrets) delete(item dbus.ObjectPath) error {
	var prompt dbus.ObjectPath
	if err := s.call(item, "org.freedesktop.Secret.Item.Delete", nil, &prompt); err != nil {
		return err
	}
	return s.prompt(prompt)
}
