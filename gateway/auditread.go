package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/vault"
)

// Reading the audit log through the gateway: while the vault is unlocked
// the gateway holds its data key, so it can open the vault again without a
// key derivation, take the log's identity, and stream the events it
// decrypts. "postern audit show", "activity" and "sessions --history" ask
// it first, and ask for the passphrase only when it cannot answer. The
// control socket is out of a confined run's reach, and the gateway answers
// only a caller outside every run, as for an approver's act: a run reads
// the history no more easily than before (with the passphrase).

// auditBatchEvents and auditBatchBytes bound one response of OpAuditRead.
const (
	auditBatchEvents = 512
	auditBatchBytes  = 256 << 10
)

// auditReads bounds the reads of the log the gateway runs at once (each
// takes the cores and a few MiB of batches in flight); a read beyond
// them waits for its turn. A read whose client does not take its events
// (a person paused in a pager) gives its turn up until it does.
var auditReads = make(chan struct{}, 2)

// auditOpen bounds the reads of the log open at once, whether they hold
// a turn or gave it up. A read whose client does not take its events
// holds the batches it has in flight (a few MiB) for as long as the
// client stays connected: a program of the user's that started reads and
// paused them, one a control connection, held hundreds of MiB of the
// gateway's memory. Past the bound a read is refused, not queued, since
// the open ones may stay open for ever.
var auditOpen = make(chan struct{}, maxAuditReadsOpen)

const maxAuditReadsOpen = 8

// errAuditReadsOpen refuses a read past auditOpen.
var errAuditReadsOpen = fmt.Errorf("%d reads of the audit log are open in the gateway, the most it keeps at once (a pager left open holds one); try again once one ends", maxAuditReadsOpen)

// auditTurn is one read's turn among auditReads.
type auditTurn struct{ held bool }

// take waits for a turn, or for ctx to end.
func (t *auditTurn) take(ctx context.Context) error {
	select {
	case auditReads <- struct{}{}:
		t.held = true
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// give gives the turn up, if held.
func (t *auditTurn) give() {
	if t.held {
		<-auditReads
		t.held = false
	}
}

// auditIdentity returns the audit log's identity, and what the log is
// verified against as it is read (api.AuditReadChecks), from the vault
// opened again with the data key kept while it is unlocked.
func (s *vaultState) auditIdentity() (id [32]byte, checks audit.VerifyOptions, err error) {
	err = s.Read(func(v *vault.Vault) (err error) {
		checks = api.AuditReadChecks(v)
		id, err = api.AuditIdentity(v)
		return err
	})
	return id, checks, err
}

func (g *Gateway) opAuditRead(ctx context.Context, peer *procid.Peer, a api.AuditReadOptions, send func(any) error) error {
	al := g.currentAudit()
	if al == nil {
		return notKept(errors.New("this gateway keeps no audit log (it has no vault)"))
	}
	if a.Log != "" && !api.SameFile(a.Log, al.cfg.Path) {
		return notKept(fmt.Errorf("this gateway keeps another audit log (%s)", al.cfg.Path))
	}
	if err := g.engine.OutsideRuns(peer, "audit read"); err != nil {
		return err
	}
	select {
	case auditOpen <- struct{}{}:
		defer func() { <-auditOpen }()
	default:
		return errAuditReadsOpen
	}
	var turn auditTurn
	if err := turn.take(ctx); err != nil {
		return err
	}
	defer turn.give()
	id, checks, err := g.vault.auditIdentity()
	defer clear(id[:])
	if err != nil {
		return err
	}
	if err := send(nil); err != nil {
		return err
	}
	var events, line []byte
	n := 0
	flush := func(end bool) error {
		line = api.AppendAuditBatch(line[:0], events, end)
		events, n = events[:0], 0
		turn.give() // while the client takes its time
		if err := send(json.RawMessage(line)); err != nil {
			return err
		}
		return turn.take(ctx)
	}
	// The events go on as the JSON they were stored as (their seq added):
	// the log is verified and decrypted as for any read, and an event the
	// writer did not store so is decoded and encoded again.
	rep, err := audit.ReadLogJSON(al.cfg.Path, id, audit.ReadOptions{VerifyOptions: checks, Since: a.Since, Run: a.Run}, func(js []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if n > 0 {
			events = append(events, ',')
		}
		events = append(events, js...)
		if n++; n >= auditBatchEvents || len(events) >= auditBatchBytes {
			return flush(false)
		}
		return nil
	})
	if err == nil {
		err = rep.Err()
	}
	if err != nil {
		if n > 0 {
			flush(false) // the events before the bad record, as a reader of the file gets them
		}
		return err
	}
	return flush(true)
}
