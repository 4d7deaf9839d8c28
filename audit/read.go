package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
)

// DecodeEvents verifies the log read from r as Verify does and, with the
// recipient's identity, decrypts each entry that verified and passes it to
// fn in order. Checkpoints are passed as events of type EventCheckpoint
// (Detail holds epoch and max_unsealed). Each entry must carry this log's id
// and its own seq inside the ciphertext, so an entry moved from another
// position or another log is an error. Entries after the report's last
// checkpoint are not sealed.
//
// The error is non-nil when r cannot be read, when an entry does not decrypt
// or does not belong where it is, or when fn fails; what Verify would report
// is in the Report.
func DecodeEvents(r io.Reader, identity [32]byte, opts VerifyOptions, fn func(Event) error) (*Report, error) {
	op, err := newOpener(identity)
	if err != nil {
		return nil, err
	}
	sc, err := newScanner(opts)
	if err != nil {
		return nil, err
	}
	var logID [16]byte
	sc.onHeader = func(h *header) error {
		if h.recipient != op.pub {
			return fmt.Errorf("this identity does not open the log: its entries are sealed to %s, the identity belongs to %s",
				FormatRecipient(h.recipient), FormatRecipient(op.pub))
		}
		logID = h.logID
		return nil
	}
	sc.onEntry = func(seq uint64, ct []byte) error {
		js, err := op.open(logID, seq, ct)
		if err != nil {
			return fmt.Errorf("audit entry seq %d: %w", seq, err)
		}
		var e Event
		if err := json.Unmarshal(js, &e); err != nil {
			return fmt.Errorf("audit entry seq %d: decode event: %w", seq, err)
		}
		e.Seq = seq
		return fn(e)
	}
	sc.onCheckpoint = func(seq uint64, c *checkpoint) error {
		return fn(Event{Seq: seq, Type: EventCheckpoint, Time: unixNano(c.time), Detail: map[string]string{
			"epoch":        strconv.FormatUint(c.epoch, 10),
			"max_unsealed": strconv.FormatUint(uint64(c.maxUnsealed), 10),
		}})
	}
	if err := sc.run(r); err != nil {
		return sc.report(), err
	}
	return sc.report(), nil
}

// ReadEvents decrypts every entry of the log at path with the recipient's
// identity and returns the events, checkpoints included (see DecodeEvents).
// When the log fails verification it returns the events before the first
// bad record together with the report's error.
func ReadEvents(path string, identity [32]byte) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	defer f.Close()
	var evs []Event
	rep, err := DecodeEvents(f, identity, VerifyOptions{}, func(e Event) error {
		evs = append(evs, e)
		return nil
	})
	if err != nil {
		return evs, err
	}
	return evs, rep.Err()
}
