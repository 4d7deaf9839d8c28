package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/internal/confine"
	"github.com/postern/postern/internal/control"
)

// ErrNoGateway is returned when nothing answers at the control socket.
var ErrNoGateway = control.ErrNoGateway

// ErrNoAnswer is returned when the gateway took a call and did not answer
// it within the call's time limit.
var ErrNoAnswer = errors.New("the gateway took the call and did not answer")

// ErrBadConfig is wrapped by the error of a gateway that does not start
// because of its configuration file.
var ErrBadConfig = errors.New("configuration")

// Client calls a running gateway. Each method is one operation; each
// call has a default time limit, shortened by the context's deadline.
type Client struct {
	// Socket is the gateway's control socket.
	Socket string
}

// NewClient returns a client of the gateway that serves agentSocket (its
// main agent socket or a run's).
func NewClient(agentSocket string) *Client {
	return &Client{Socket: ControlSocket(agentSocket)}
}

// Status reports the gateway's boot id, vault state and epoch, and counts.
func (c *Client) Status(ctx context.Context) (*Status, error) {
	var st Status
	return &st, c.call(ctx, OpStatus, nil, &st)
}

// Lock locks the gateway: decrypted keys are wiped, every grant ends.
// Locking a locked gateway succeeds with Already set.
func (c *Client) Lock(ctx context.Context) (*LockResult, error) {
	var res LockResult
	return &res, c.call(ctx, OpLock, nil, &res)
}

// Unlock opens the gateway's vault with a passphrase or a data key.
func (c *Client) Unlock(ctx context.Context, a UnlockArgs) error {
	return c.call(ctx, OpUnlock, a, nil)
}

// PrepareRun asks for a new run's id and agent socket.
func (c *Client) PrepareRun(ctx context.Context, label string) (*RunPrepared, error) {
	var res RunPrepared
	return &res, c.call(ctx, OpRunPrepare, RunPrepare{Label: label}, &res)
}

// StartRun reports the process launched for a prepared run, and how it
// is confined.
func (c *Client) StartRun(ctx context.Context, id string, pid int, level confine.Level) error {
	return c.call(ctx, OpRunStart, RunStart{ID: id, PID: pid, Confinement: level}, nil)
}

// Cards lists the pending approval cards. They are read as a console
// reads them, from the stream of their changes (the first change, a
// snapshot, in parts when it is large), not as one answer: together they
// may be larger than a line holds. It does not count as an approver.
func (c *Client) Cards(ctx context.Context) (*CardsResult, error) {
	var board CardBoard
	err := c.FollowCards(ctx, false, func(d *CardsDelta) error {
		if err := board.Apply(d); err != nil {
			return err
		}
		if d.More {
			return nil
		}
		return errSnapshotRead
	})
	if !errors.Is(err, errSnapshotRead) {
		if err == nil {
			err = ctx.Err()
		}
		return nil, err
	}
	return &CardsResult{Version: board.Seq(), Cards: board.Cards()}, nil
}

// errSnapshotRead ends the stream Cards reads once it has every card.
var errSnapshotRead = errors.New("the pending cards are read")

// FollowCards passes each change of the pending cards to fn as it
// happens: first a snapshot of them all, then what changed (a CardBoard
// applies them), until ctx ends (nil), fn returns an error (that error)
// or the gateway ends the stream (an error). A console follows them: it
// shows the cards to a person, and while it follows the gateway counts
// it as an approver.
func (c *Client) FollowCards(ctx context.Context, console bool, fn func(*CardsDelta) error) error {
	// Each line is decoded once, its change with it: a change carries
	// whole cards, which a decoding of the line and then of its result
	// would read twice.
	err := c.streamLines(ctx, OpCardsFollow, CardsFollowArgs{Console: console}, func(line []byte) error {
		d, err := decodeResult[CardsDelta](line)
		if err != nil || d == nil {
			return err // an error, or the stream is open
		}
		return fn(d)
	})
	return followEnded(ctx, err, "the stream of cards")
}

// followEnded is how a stream that follows the gateway until ctx ends
// ended: nil when ctx ended it, else its error, or, when the connection
// closed with no error said, that the gateway ended it (it stopped, or
// was killed): a follower never reads the gateway's end as its own.
func followEnded(ctx context.Context, err error, what string) error {
	switch {
	case ctx.Err() != nil:
		return nil
	case err == nil:
		return fmt.Errorf("the gateway ended %s: it stopped, or was killed", what)
	}
	return err
}

// Answer decides card id and returns the verdict the gateway applied
// (once, for a session answer to a card that offers no session). subject
// picks the run a session approval binds, by its index on the card; a
// negative subject keeps the card's choice.
func (c *Client) Answer(ctx context.Context, id string, v Verdict, subject int) (Verdict, error) {
	a := AnswerArgs{ID: id, Decision: v.String()}
	if subject >= 0 {
		a.Subject = &subject
	}
	var res AnswerResult
	if err := c.call(ctx, OpAnswer, a, &res); err != nil {
		return 0, err
	}
	if res.Applied == "" {
		// A gateway that does not say what it applied applied the
		// answer: as it was given.
		return v, nil
	}
	return approvals.ParseVerdict(res.Applied)
}

// Sessions lists the live runs and grants.
func (c *Client) Sessions(ctx context.Context) (*SessionsResult, error) {
	var res SessionsResult
	return &res, c.call(ctx, OpSessions, nil, &res)
}

// Revoke ends a grant, or every grant of a run, now; it returns how many
// grants ended.
func (c *Client) Revoke(ctx context.Context, target string) (int, error) {
	return c.revoke(ctx, RevokeArgs{Target: target})
}

// RevokeAll ends every grant now.
func (c *Client) RevokeAll(ctx context.Context) (int, error) {
	return c.revoke(ctx, RevokeArgs{All: true})
}

func (c *Client) revoke(ctx context.Context, a RevokeArgs) (int, error) {
	var res RevokeResult
	err := c.call(ctx, OpRevoke, a, &res)
	return res.Revoked, err
}

// JournalPage lists a page of the bastion's journal entries, newest
// first (see JournalArgs); EachJournalEntry goes through all of them.
func (c *Client) JournalPage(ctx context.Context, a JournalArgs) ([]*JournalEntry, error) {
	var out []*JournalEntry
	return out, c.call(ctx, OpJournalList, a, &out)
}

// JournalEntry returns one journal entry.
func (c *Client) JournalEntry(ctx context.Context, id string) (*JournalEntry, error) {
	var out []*JournalEntry
	if err := c.call(ctx, OpJournalList, JournalArgs{ID: id}, &out); err != nil {
		return nil, err
	}
	if len(out) != 1 {
		return nil, fmt.Errorf("the gateway answered %d entries for %s", len(out), id)
	}
	return out[0], nil
}

// Resolve resolves an entry whose outcome is unknown: by reading its
// remote markers (a.Result empty), or with what a person found out.
func (c *Client) Resolve(ctx context.Context, a ResolveArgs) (*JournalEntry, error) {
	var e JournalEntry
	return &e, c.call(ctx, OpJournalResolve, a, &e)
}

// ChangeVault has the gateway change its vault (keys added or removed, a
// new passphrase) and record the change in its audit log.
func (c *Client) ChangeVault(ctx context.Context, ch *VaultChange) (*VaultChanged, error) {
	var res VaultChanged
	return &res, c.call(ctx, OpVaultChange, ch, &res)
}

// Check dry-runs the gateway's policy for a request.
func (c *Client) Check(ctx context.Context, a CheckArgs) (*CheckResult, error) {
	var res CheckResult
	return &res, c.call(ctx, OpCheck, a, &res)
}

// NewJournal is a person's decision about a damaged journal: the gateway
// keeps the damaged file aside and starts a new journal; the bastion
// serves again.
func (c *Client) NewJournal(ctx context.Context) (*JournalNewResult, error) {
	var res JournalNewResult
	return &res, c.call(ctx, OpJournalNew, nil, &res)
}

// FollowJournal passes every journal entry to fn as it changes, from the
// moment the gateway accepted the call, until ctx ends (nil), fn returns
// an error (that error) or the gateway ends the stream (its error, or
// that it ended it).
// ready, when not nil, is called once the gateway follows.
func (c *Client) FollowJournal(ctx context.Context, ready func(), fn func(*JournalEntry) error) error {
	first := true
	err := c.stream(ctx, OpJournalFollow, nil, func(result json.RawMessage) error {
		if first {
			first = false
			if ready != nil {
				ready()
			}
			return nil
		}
		var e JournalEntry
		if err := json.Unmarshal(result, &e); err != nil {
			return fmt.Errorf("malformed journal entry from the gateway: %w", err)
		}
		return fn(&e)
	})
	return followEnded(ctx, err, "the journal stream")
}

// call makes one request and decodes its result into out (which may be
// nil).
func (c *Client) call(ctx context.Context, op Op, args, out any) error {
	answered := false
	err := c.stream(ctx, op, args, func(result json.RawMessage) error {
		answered = true
		if out != nil && len(result) > 0 {
			return json.Unmarshal(result, out)
		}
		return errOneAnswer
	})
	if errors.Is(err, errOneAnswer) || err == nil && answered {
		return nil
	}
	if err == nil {
		return errors.New("the gateway closed the connection without answering")
	}
	return err
}

// errOneAnswer ends the reading of a call's answer.
var errOneAnswer = errors.New("one answer")

// stream makes one request and passes the result of each response line
// to fn; an error response ends it with that error.
func (c *Client) stream(ctx context.Context, op Op, args any, fn func(json.RawMessage) error) error {
	return c.streamLines(ctx, op, args, func(line []byte) error {
		result, err := decodeResponse(line)
		if err != nil {
			return err
		}
		return fn(result)
	})
}

// decodeResponse returns the result of a response line, or its error.
func decodeResponse(line []byte) (json.RawMessage, error) {
	var resp Response
	if err := json.Unmarshal(line, &resp); err != nil {
		return nil, malformedResponse(err)
	}
	return resp.Result, resp.err()
}

// decodeResult decodes a response line and its result, a T, in one pass;
// the result is nil when the line has none (a stream that is open).
func decodeResult[T any](line []byte) (*T, error) {
	var resp struct {
		Response
		Result *T `json:"result,omitempty"` // hides Response's, one level down
	}
	if err := json.Unmarshal(line, &resp); err != nil {
		return nil, malformedResponse(err)
	}
	if err := resp.err(); err != nil {
		return nil, err
	}
	return resp.Result, nil
}

func malformedResponse(err error) error {
	return fmt.Errorf("malformed answer from the gateway: %w", err)
}

// err returns the error a response carries, or nil.
func (r *Response) err() error {
	if r.Error == "" {
		return nil
	}
	return &Error{Code: r.Code, Msg: strings.TrimSpace(r.Error)}
}

// streamLines makes one request and passes each response line to fn.
func (c *Client) streamLines(ctx context.Context, op Op, args any, fn func(line []byte) error) error {
	if d := timeLimit(op); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, d, fmt.Errorf("%w %q within %s: it may be stopped or too busy", ErrNoAnswer, op, d))
		defer cancel()
	}
	req := Request{Op: op}
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			return err
		}
		req.Args = b
	}
	line, err := json.Marshal(req)
	if err != nil {
		return err
	}
	return control.Stream(ctx, c.Socket, line, fn)
}
