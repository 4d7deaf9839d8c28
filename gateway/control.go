package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/bastion"
	"github.com/postern/postern/bastion/journal"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/inventory"
	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/vault"
)

// handler answers one control operation for a verified peer.
type handler func(ctx context.Context, peer *procid.Peer, args json.RawMessage) (any, error)

// typed adapts a method that takes its operation's decoded arguments.
func typed[A any](f func(context.Context, *procid.Peer, A) (any, error)) handler {
	return func(ctx context.Context, peer *procid.Peer, raw json.RawMessage) (any, error) {
		var a A
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &a); err != nil {
				return nil, fmt.Errorf("%w: %v", errMalformed, err)
			}
		}
		return f(ctx, peer, a)
	}
}

// noArgs is the argument type of operations that take none.
type noArgs struct{}

// handlers maps each operation of the control contract to its method
// (handlers.go).
func (g *Gateway) handlers() map[api.Op]handler {
	return map[api.Op]handler{
		api.OpStatus:         typed(g.opStatus),
		api.OpLock:           typed(g.opLock),
		api.OpUnlock:         typed(g.opUnlock),
		api.OpRunPrepare:     typed(g.opRunPrepare),
		api.OpRunStart:       typed(g.opRunStart),
		api.OpCards:          typed(g.opCards),
		api.OpAnswer:         typed(g.opAnswer),
		api.OpSessions:       typed(g.opSessions),
		api.OpJournalList:    typed(g.opJournalList),
		api.OpJournalResolve: typed(g.opJournalResolve),
		api.OpRevoke:         typed(g.opRevoke),
		api.OpVaultChange:    typed(g.opVaultChange),
		api.OpHosts:          typed(g.opHosts),
		api.OpHostsAdd:       typed(g.opHostsAdd),
		api.OpHostsRemove:    typed(g.opHostsRemove),
		api.OpCheck:          typed(g.opCheck),
	}
}

// answerControl answers one request line of the control socket.
func (g *Gateway) answerControl(ctx context.Context, peer *procid.Peer, line []byte) []byte {
	b, _ := json.Marshal(g.call(ctx, peer, line))
	return b
}

func (g *Gateway) call(ctx context.Context, peer *procid.Peer, line []byte) api.Response {
	var req api.Request
	if err := json.Unmarshal(line, &req); err != nil {
		return errorResponse(errMalformed)
	}
	h := g.ops[req.Op]
	if h == nil {
		return errorResponse(fmt.Errorf("%w %q (is the gateway older than this command?)", errUnknownOp, req.Op))
	}
	if err := peer.Verify(); err != nil {
		return errorResponse(fmt.Errorf("%w: %v", errPeerChanged, err))
	}
	res, err := h(ctx, peer, req.Args)
	if err != nil {
		return errorResponse(err)
	}
	var resp api.Response
	if res != nil {
		resp.Result, _ = json.Marshal(res)
	}
	return resp
}

func errorResponse(err error) api.Response {
	return api.Response{Error: err.Error(), Code: wireCode(err)}
}

// Errors of the control operations themselves; the vault state machine's
// are in vaultstate.go.
var (
	errMalformed   = errors.New("malformed request")
	errUnknownOp   = errors.New("unknown operation")
	errPeerChanged = errors.New("the requesting process changed")
	errNoBastion   = errors.New("the bastion is not enabled in this gateway ([bastion] enabled = true)")
)

// errBadRequest is the kind of an error of another package that has no
// sentinel of its own but is a request that does not apply; kinded
// attaches it without changing the message.
var errBadRequest = errors.New("bad request")

type kinded struct {
	error
	kind error
}

func (k kinded) Is(target error) bool { return target == k.kind }
func (k kinded) Unwrap() error        { return k.error }

// badRequest marks err as a request that does not apply.
func badRequest(err error) error { return kinded{err, errBadRequest} }

// wireCode classifies an error for the command line. It is the one
// place where Go errors become the codes of the control contract.
func wireCode(err error) api.Code {
	is := func(targets ...error) bool {
		for _, t := range targets {
			if errors.Is(err, t) {
				return true
			}
		}
		return false
	}
	switch {
	case is(errMalformed, errUnknownOp, errBadRequest, errNotLocked):
		return api.CodeUsage
	case is(errPeerChanged, approvals.ErrSelfApprove, approvals.ErrSameSession, approvals.ErrApproverUndecided, bastion.ErrDenied):
		return api.CodeDenied
	case is(errAlreadyLocked):
		return api.CodeLocked
	case is(errNoVault, errVaultGone, errNoBastion, approvals.ErrNoCard, approvals.ErrNoGrant, inventory.ErrNoHost, journal.ErrNotFound, vault.ErrKeyNotFound, vault.ErrNoKeyForCert):
		return api.CodeNotFound
	case is(vault.ErrWrongPassphrase):
		return api.CodeWrongPassphrase
	case is(errStaleKey):
		return api.CodeStaleKey
	case is(bastion.ErrNoKeys):
		return api.CodeNoKeys
	case is(bastion.ErrNoMarkers):
		return api.CodeNoMarkers
	}
	return ""
}
