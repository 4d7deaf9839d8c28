package api

import (
	"context"

	"github.com/postern/postern/internal/inventory"
)

// Host is a host of the inventory, as "postern hosts list" shows it.
type Host = inventory.Host

// HostKey is one of a host's keys.
type HostKey = inventory.Key

// HostsResult lists the host inventory (OpHosts, and after a change).
type HostsResult struct {
	Hosts []Host `json:"hosts"`
}

// HostsAddArgs binds a name to host keys (OpHostsAdd, "postern hosts add"
// and "import"). Keys are public keys in authorized_keys form, each with
// the source the person was shown; Class, when set, replaces the host's
// class ("" removes it). With Class set and no keys, a host the inventory
// has changes class alone.
type HostsAddArgs struct {
	Name  string    `json:"name"`
	Class *string   `json:"class,omitempty"`
	Keys  []HostKey `json:"keys"`
}

// HostsRemoveArgs removes a host (OpHostsRemove).
type HostsRemoveArgs struct {
	Name string `json:"name"`
}

// Hosts lists the host inventory.
func (c *Client) Hosts(ctx context.Context) (*HostsResult, error) {
	var res HostsResult
	return &res, c.call(ctx, OpHosts, nil, &res)
}

// AddHost binds a name (and a class) to host keys. The gateway refuses it
// from inside a run; it records the change in the audit log.
func (c *Client) AddHost(ctx context.Context, a HostsAddArgs) (*HostsResult, error) {
	var res HostsResult
	return &res, c.call(ctx, OpHostsAdd, a, &res)
}

// RemoveHost removes a host from the inventory.
func (c *Client) RemoveHost(ctx context.Context, name string) (*HostsResult, error) {
	var res HostsResult
	return &res, c.call(ctx, OpHostsRemove, HostsRemoveArgs{Name: name}, &res)
}

// SecretHostInventory names the host inventory the gateway seals into the
// vault.
const SecretHostInventory = "host-inventory"
