package procid

import "errors"

var errNoNamespaces = errors.New("macOS has no namespaces")

// OwnNamespaces is unknown on macOS.
func OwnNamespaces() (Namespaces, error) { return Namespaces{}, errNoNamespaces }

// Namespaces is unknown on macOS.
func (p *Peer) Namespaces() (Namespaces, error) { return Namespaces{}, errNoNamespaces }

// InNamespaces is never true on macOS, where no run is confined.
func (p *Peer) InNamespaces(Namespaces) (bool, error) { return false, errNoNamespaces }

// NamespaceOwner is unknown on macOS.
func (p *Peer) NamespaceOwner() (int, error) { return -1, errNoNamespaces }

// PIDNamespaceDepth is 0 on macOS.
func (t *Table) PIDNamespaceDepth(int) (int, error) { return 0, nil }
