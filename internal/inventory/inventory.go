// Package inventory is postern's own record of SSH hosts: the names and
// classes (such as "production") a person gave to host keys. Policy rules
// match it (host and class in postern.toml(5)); a destination's names on
// an approval card come from it. It is the authority for a name because
// only an approver changes it: the gateway owns its file
// ($XDG_STATE_HOME/postern/hosts.json), changes it only for an approver
// outside every run, and records each change in the audit log.
// known_hosts, which any program of the user can edit, is a source for
// "postern hosts import" and for display, never for a name.
//
// An Inventory is an immutable value: a change makes a new one ([With],
// [Without]) that the gateway writes and then puts in force.
//
// A host has a name, an optional class and one or more keys (a host
// usually has one of each type). A key belongs to one host: binding it to
// another name is refused until the first is removed, so that a key never
// has two classes. A host certificate is looked up by the key it
// certifies: session-bind proved the host holds that key.
package inventory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/internal/atomicfile"
	"github.com/postern/postern/internal/smallfile"
)

// Host is one named host.
type Host struct {
	Name    string    `json:"name"`
	Class   string    `json:"class,omitempty"`
	Keys    []Key     `json:"keys"`
	Added   time.Time `json:"added"`
	Changed time.Time `json:"changed"`
}

// Key is one host key of a host.
type Key struct {
	// Key is the public key in authorized_keys form ("ssh-ed25519 AAAA…").
	Key         string `json:"key"`
	Fingerprint string `json:"fingerprint"` // SHA256:…
	// Source says where the person took the key from, as they were shown
	// it ("known_hosts ~/.ssh/known_hosts (hashed entry)", "file -").
	Source string    `json:"source"`
	Added  time.Time `json:"added"`
}

// Inventory is a set of hosts. The zero value and nil are empty.
type Inventory struct {
	hosts []Host           // sorted by name
	byKey map[string][]int // key blob -> indexes into hosts
	names map[string]int   // name -> index
}

// file is the format of hosts.json.
type file struct {
	Version int          `json:"version"`
	Hosts   checkedHosts `json:"hosts"`
}

// checkedHosts is the file's hosts, each checked as it is decoded: a
// file of maxFile bytes of "{}," would otherwise be millions of hosts,
// gigabytes, before the first was found wrong.
type checkedHosts []Host

func (hs *checkedHosts) UnmarshalJSON(b []byte) error {
	*hs = nil // a second "hosts" replaces the first, as for a slice
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	tok, err := dec.Token()
	switch {
	case err != nil:
		return err
	case tok == nil: // null
		return nil
	case tok != json.Delim('['):
		return fmt.Errorf("hosts: a JSON %v, not an array", tok)
	}
	for dec.More() {
		var h Host
		if err := dec.Decode(&h); err != nil {
			return err
		}
		if err := checkHost(&h); err != nil {
			return err
		}
		*hs = append(*hs, h)
	}
	return nil // the rest (']') was checked with the whole file
}

const version = 1

// maxFile bounds the file read: far above any real inventory.
const maxFile = 16 << 20

// Load reads the inventory file. A missing file is an empty inventory;
// a damaged one is an error (the gateway then runs with an empty one, in
// which no host has a name, and says why).
func Load(path string) (*Inventory, error) {
	b, err := smallfile.Read(path, maxFile)
	if errors.Is(err, os.ErrNotExist) {
		return &Inventory{}, nil
	}
	if err != nil {
		return nil, err
	}
	return Parse(b)
}

// Parse reads an inventory file's contents, checking every host. A file
// of a later version is refused as such before its contents are read:
// what that version added would otherwise read as damage.
func Parse(b []byte) (*Inventory, error) {
	var v struct {
		Version int `json:"version"`
	}
	if json.Unmarshal(b, &v) == nil && v.Version > version {
		return nil, fmt.Errorf("host inventory: version %d, written by a newer postern (this build reads version %d): upgrade postern to read it", v.Version, version)
	}
	var f file
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("host inventory: %w", err)
	}
	if f.Version != version {
		return nil, fmt.Errorf("host inventory: version %d, want %d", f.Version, version)
	}
	inv := &Inventory{hosts: f.Hosts} // each host checked as it was read
	if err := inv.index(); err != nil {
		return nil, fmt.Errorf("host inventory: %w", err)
	}
	return inv, nil
}

// Marshal returns the file's contents.
func (inv *Inventory) Marshal() []byte {
	b, _ := json.MarshalIndent(file{Version: version, Hosts: inv.Hosts()}, "", "  ")
	return append(b, '\n')
}

// Save writes the inventory to path (atomicfile: the old file or the new,
// never a mix).
func (inv *Inventory) Save(path string) error {
	return atomicfile.Write(path, inv.Marshal(), 0o600)
}

// index builds the lookups, refusing a name or a key given twice (a
// key twice under one host would name the host twice on a card).
func (inv *Inventory) index() error {
	slices.SortFunc(inv.hosts, func(a, b Host) int { return strings.Compare(a.Name, b.Name) })
	inv.byKey = map[string][]int{}
	inv.names = map[string]int{}
	for i := range inv.hosts {
		h := &inv.hosts[i]
		if _, dup := inv.names[h.Name]; dup {
			return fmt.Errorf("host %q is named twice", h.Name)
		}
		inv.names[h.Name] = i
		for _, k := range h.Keys {
			pub, _, _, _, err := ssh.ParseAuthorizedKey([]byte(k.Key))
			if err != nil {
				return fmt.Errorf("host %q: key %q: %w", h.Name, k.Key, err)
			}
			blob := string(pub.Marshal())
			switch js := inv.byKey[blob]; {
			case slices.Contains(js, i):
				return fmt.Errorf("host %q lists key %s twice", h.Name, k.Fingerprint)
			case len(js) > 0:
				return fmt.Errorf("key %s is bound to both %q and %q", k.Fingerprint, inv.hosts[js[0]].Name, h.Name)
			}
			inv.byKey[blob] = append(inv.byKey[blob], i)
		}
	}
	return nil
}

// Hosts returns the hosts, sorted by name.
func (inv *Inventory) Hosts() []Host {
	if inv == nil {
		return []Host{}
	}
	out := make([]Host, len(inv.hosts))
	for i, h := range inv.hosts {
		h.Keys = slices.Clone(h.Keys)
		out[i] = h
	}
	return out
}

// Len returns the number of hosts.
func (inv *Inventory) Len() int {
	if inv == nil {
		return 0
	}
	return len(inv.hosts)
}

// Host returns the host named name, as Find finds it.
func (inv *Inventory) Host(name string) (Host, bool) {
	if inv == nil {
		return Host{}, false
	}
	i := Find(inv.hosts, name)
	if i < 0 {
		return Host{}, false
	}
	return inv.Hosts()[i], true
}

// Find returns the index of the host named name: the host of that very
// name, else one whose name is name as DNS and rules read it (NameForm);
// -1 when there is none. A file may hold two names that differ in case
// alone (an older postern added them): each is found by its own.
func Find(hosts []Host, name string) int {
	if i := slices.IndexFunc(hosts, func(h Host) bool { return h.Name == name }); i >= 0 {
		return i
	}
	n := NameForm(name)
	return slices.IndexFunc(hosts, func(h Host) bool { return NameForm(h.Name) == n })
}

// NameForm is a host name as it is compared, and as rules match it:
// HostForm, as the IP address it is when it is one (AddrForm).
func NameForm(s string) string { return AddrForm(HostForm(s)) }

// HostForm is a host name or pattern in lower case, as DNS reads it, and
// without the DNS root's trailing dot ("db.example.com." is
// db.example.com).
func HostForm(s string) string {
	s = strings.ToLower(s)
	if len(s) > 1 {
		s = strings.TrimSuffix(s, ".")
	}
	return s
}

// AddrForm returns an IP address as netip writes the address it is (an
// IPv4 address mapped into IPv6 as the IPv4 address, an IPv6 address in
// its short form), and anything else as it is.
func AddrForm(s string) string {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().String()
	}
	return s
}

// Lookup returns the names and classes the inventory gives a verified
// host key (a certificate is looked up by the key it certifies).
func (inv *Inventory) Lookup(key ssh.PublicKey) (names, classes []string) {
	if inv == nil || key == nil {
		return nil, nil
	}
	for _, i := range inv.byKey[string(HostKey(key).Marshal())] {
		h := &inv.hosts[i]
		names = append(names, h.Name)
		if h.Class != "" && !slices.Contains(classes, h.Class) {
			classes = append(classes, h.Class)
		}
	}
	return names, classes
}

// HostKey returns the key a host certificate certifies, or key itself: a
// host that presents a certificate is the host of its key (session-bind
// proved it holds that key), named and fingerprinted by it.
func HostKey(key ssh.PublicKey) ssh.PublicKey {
	if c, ok := key.(*ssh.Certificate); ok {
		return c.Key
	}
	return key
}
