package inventory

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// Limits on what a person may name.
const (
	maxName  = 255
	maxClass = 32
	maxKeys  = 16
)

// CheckName checks a host name: what ssh would take as a host (letters,
// digits and . - _ : [ ] @), so that a name on a card is what it says.
func CheckName(name string) error {
	if name == "" || len(name) > maxName {
		return fmt.Errorf("host name %q: give 1 to %d characters", name, maxName)
	}
	if name[0] == '-' {
		return fmt.Errorf("host name %q starts with '-'", name)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(".-_:[]@", c)) {
			return fmt.Errorf("host name %q: %q is not a letter, a digit or one of . - _ : [ ] @", name, c)
		}
	}
	return nil
}

// The answers the approver consoles read from a line typed on a card,
// by what each does: deny, approve this one use, approve the run.
var (
	AnswersDeny    = []string{"d", "deny"}
	AnswersOnce    = []string{"o", "once"}
	AnswersSession = []string{"s", "session"}
)

// ConsoleAnswers are all the answers the consoles read. A new host is
// not named as one: approving a login to a host takes its name typed out
// (Card.Word), so that no reflex approves it, and a host named "o" would
// be approved by the key that approves once on every other card, one
// named "d" never. A file that has such a name already is read as it is.
var ConsoleAnswers = slices.Concat(AnswersDeny, AnswersOnce, AnswersSession)

// CheckClass checks a class: lower-case letters, digits, - and _.
func CheckClass(class string) error {
	if len(class) > maxClass {
		return fmt.Errorf("class %q is longer than %d characters", class, maxClass)
	}
	for _, c := range class {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("class %q: use lower-case letters, digits, - and _", class)
		}
	}
	return nil
}

func checkHost(h *Host) error {
	if err := CheckName(h.Name); err != nil {
		return err
	}
	if err := CheckClass(h.Class); err != nil {
		return fmt.Errorf("host %q: %w", h.Name, err)
	}
	if len(h.Keys) == 0 || len(h.Keys) > maxKeys {
		return fmt.Errorf("host %q has %d keys; a host has 1 to %d", h.Name, len(h.Keys), maxKeys)
	}
	for _, k := range h.Keys {
		pub, _, _, _, err := ssh.ParseAuthorizedKey([]byte(k.Key))
		if err != nil {
			return fmt.Errorf("host %q: key %q: %w", h.Name, k.Key, err)
		}
		if fp := ssh.FingerprintSHA256(pub); k.Fingerprint != fp {
			return fmt.Errorf("host %q: key %s is recorded with fingerprint %s", h.Name, fp, k.Fingerprint)
		}
	}
	return nil
}

// NewKey describes a host key for With.
func NewKey(pub ssh.PublicKey, source string, now time.Time) Key {
	if c, ok := pub.(*ssh.Certificate); ok {
		pub = c.Key
	}
	return Key{
		Key:         strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub))),
		Fingerprint: ssh.FingerprintSHA256(pub),
		Source:      source,
		Added:       now.UTC(),
	}
}

// ErrKeyTaken refuses a key that already names another host.
var ErrKeyTaken = errors.New("the key already belongs to another host")

// With returns a new inventory in which host name has class (when class
// is not nil; "" removes the class) and the given keys besides those it
// had. A key that belongs to another host is refused: remove that host
// first.
func (inv *Inventory) With(name string, class *string, keys []Key, now time.Time) (*Inventory, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	hosts := inv.Hosts()
	i := Find(hosts, name)
	if i < 0 {
		if slices.ContainsFunc(ConsoleAnswers, func(a string) bool { return strings.EqualFold(a, name) }) {
			return nil, fmt.Errorf("host name %q is an answer the approver consoles take (%s): approving a login to the host takes its name typed out, so give it a longer name", name, strings.Join(ConsoleAnswers, ", "))
		}
		hosts = append(hosts, Host{Name: name, Added: now.UTC()})
		i = len(hosts) - 1
	}
	h := &hosts[i]
	h.Changed = now.UTC()
	if class != nil {
		h.Class = *class
	}
	for _, k := range keys {
		pub, _, _, _, err := ssh.ParseAuthorizedKey([]byte(k.Key))
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", k.Key, err)
		}
		if owners, _ := inv.Lookup(pub); len(owners) > 0 && owners[0] != h.Name {
			return nil, fmt.Errorf("%w: %s is %q's; remove that host first", ErrKeyTaken, k.Fingerprint, owners[0])
		}
		if !slices.ContainsFunc(h.Keys, func(o Key) bool { return o.Fingerprint == k.Fingerprint }) {
			h.Keys = append(h.Keys, k)
		}
	}
	if err := checkHost(h); err != nil {
		return nil, err
	}
	out := &Inventory{hosts: hosts}
	if err := out.index(); err != nil {
		return nil, err
	}
	return out, nil
}

// ErrNoHost is returned for a host the inventory does not have.
var ErrNoHost = errors.New("no such host in the inventory")

// Without returns a new inventory without host name.
func (inv *Inventory) Without(name string) (*Inventory, error) {
	hosts := inv.Hosts()
	i := Find(hosts, name)
	if i < 0 {
		return nil, fmt.Errorf("%w: %q", ErrNoHost, name)
	}
	out := &Inventory{hosts: slices.Delete(hosts, i, i+1)}
	if err := out.index(); err != nil {
		return nil, err
	}
	return out, nil
}
