package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/bastion"
	"github.com/postern/postern/bastion/journal"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/control"
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
			err := json.Unmarshal(raw, &a)
			clear(raw) // a passphrase, a key: a's to clear now
			if err != nil {
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
		api.OpJournalNew:     typed(g.opJournalNew),
		api.OpVaultList:      typed(g.opVaultList),
	}
}

// streamHandlers maps each streaming operation to its method.
func (g *Gateway) streamHandlers() map[api.Op]streamHandler {
	return map[api.Op]streamHandler{
		api.OpJournalFollow: typedStream(g.opJournalFollow),
		api.OpAuditRead:     typedStream(g.opAuditRead),
		api.OpCardsFollow:   typedStream(g.opCardsFollow),
	}
}

// pacedStreams are the streams a person reads at their own pace (audit
// show or activity through a pager): the gateway waits for the client as
// long as it stays connected (control.Writer.Paced).
var pacedStreams = map[api.Op]bool{api.OpAuditRead: true}

// streamHandler answers one streaming operation: send passes each result
// to the client (send(nil) only says that the stream is open), until the
// handler returns (an error ends the stream with it) or the client hangs
// up (ctx ends).
type streamHandler func(ctx context.Context, peer *procid.Peer, args json.RawMessage, send func(any) error) error

// typedStream adapts a streaming method that takes its operation's
// decoded arguments.
func typedStream[A any](f func(context.Context, *procid.Peer, A, func(any) error) error) streamHandler {
	return func(ctx context.Context, peer *procid.Peer, raw json.RawMessage, send func(any) error) error {
		var a A
		if len(raw) > 0 {
			err := json.Unmarshal(raw, &a)
			clear(raw)
			if err != nil {
				return fmt.Errorf("%w: %v", errMalformed, err)
			}
		}
		return f(ctx, peer, a, send)
	}
}

// answerControl answers one request line of the control socket: one
// response line, or for a streaming operation a first empty response
// (the call is accepted), one per result, and an error response if the
// stream ends with one.
func (g *Gateway) answerControl(ctx context.Context, peer *procid.Peer, line []byte, w *control.Writer) {
	respond := func(r api.Response) error {
		b, _ := json.Marshal(r)
		return w.Line(b)
	}
	var req api.Request
	err := json.Unmarshal(line, &req)
	// The arguments, which may hold a passphrase or a key, are in
	// req.Args now, which the handler clears once it has decoded them
	// (typed), and which are cleared here whatever came of the request.
	clear(line)
	defer clear(req.Args)
	if err != nil {
		respond(errorResponse(errMalformed))
		return
	}
	h, sh := g.ops[req.Op], g.streams[req.Op]
	switch {
	case h == nil && sh == nil:
		respond(errorResponse(fmt.Errorf("%w %q (is the gateway older than this command?)", errUnknownOp, req.Op)))
		return
	case h != nil:
		respond(g.call(ctx, peer, h, req.Args))
		return
	}
	if err := peer.Verify(); err != nil {
		respond(errorResponse(peerError(err)))
		return
	}
	if pacedStreams[req.Op] {
		w.Paced()
	}
	started := false
	err = sh(ctx, peer, req.Args, func(res any) error {
		if !started {
			started = true
			if err := respond(api.Response{}); err != nil {
				return err
			}
		}
		if res == nil {
			return nil // the stream is open, nothing to send yet
		}
		raw, ok := res.(json.RawMessage)
		if !ok {
			var err error
			if raw, err = json.Marshal(res); err != nil {
				return respond(api.Response{})
			}
		}
		// Encoded once (valid JSON, on one line): not checked and copied
		// again by encoding a Response around it.
		return w.Line(append(append([]byte(`{"result":`), raw...), '}'))
	})
	if err != nil && ctx.Err() == nil {
		respond(errorResponse(err))
	}
}

func (g *Gateway) call(ctx context.Context, peer *procid.Peer, h handler, args json.RawMessage) api.Response {
	if err := peer.Verify(); err != nil {
		return errorResponse(peerError(err))
	}
	res, err := h(ctx, peer, args)
	if err != nil {
		return errorResponse(err)
	}
	var resp api.Response
	if res != nil {
		resp.Result, _ = json.Marshal(res)
	}
	return resp
}

// peerError is the error of a request whose requester failed its check
// against live evidence (procid.Peer.Verify, Table.Pin): it changed, or,
// when the gateway was short of descriptors or memory for the check,
// nothing is known of it, which the error says (the request is refused
// all the same, as a failure, not a denial).
func peerError(err error) error {
	if errors.Is(err, procid.ErrNoResources) {
		return fmt.Errorf("cannot check the requesting process: %w", err)
	}
	return fmt.Errorf("%w: %v", errPeerChanged, err)
}

// refuseControl is the response line of a control client the socket
// does not take (every connection of its user busy, a request too long,
// no descriptor or memory to identify it with).
func refuseControl(err error) []byte {
	b, _ := json.Marshal(errorResponse(fmt.Errorf("the control socket refused the request: %w", err)))
	return b
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

// errNotKept is the kind of an error that names a file (a vault, an
// audit log) this gateway does not keep: the command line then reads the
// file itself.
var errNotKept = errors.New("not kept by this gateway")

// notKept marks err as naming a file this gateway does not keep.
func notKept(err error) error { return kinded{err, errNotKept} }

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
	case is(errMalformed, errUnknownOp, errBadRequest, errNotLocked, approvals.ErrNotOffered):
		return api.CodeUsage
	case is(errPeerChanged, approvals.ErrSelfApprove, approvals.ErrSameSession, approvals.ErrApproverUndecided, bastion.ErrDenied, approvals.ErrInsideRun, approvals.ErrUnverified, approvals.ErrChangeCut):
		return api.CodeDenied
	case is(errAlreadyLocked, errVaultLocked, errLockedMeanwhile):
		return api.CodeLocked
	case is(errNoBastion):
		return api.CodeNoBastion
	case is(errVaultGone):
		return api.CodeVaultGone
	case is(errNoVault, errNotKept, approvals.ErrNoCard, approvals.ErrNoGrant, inventory.ErrNoHost, journal.ErrNotFound, vault.ErrKeyNotFound, vault.ErrNoKeyForCert):
		return api.CodeNotFound
	case is(errJournalDamaged):
		return api.CodeJournalDamaged
	case is(vault.ErrWrongPassphrase):
		return api.CodeWrongPassphrase
	case is(vault.ErrCorrupt, errHostsDamaged):
		return api.CodeCorrupt
	case is(vault.ErrRolledBack):
		return api.CodeRolledBack
	case is(errAuditRolledBack):
		return api.CodeAuditRolledBack
	case is(audit.ErrVerify):
		return api.CodeAuditFailed
	case is(errStaleKey):
		return api.CodeStaleKey
	case is(bastion.ErrNoKeys):
		return api.CodeNoKeys
	case is(bastion.ErrNoMarkers):
		return api.CodeNoMarkers
	case is(procid.ErrNoResources):
		return api.CodeNoResources
	}
	return ""
}
