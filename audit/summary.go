package audit

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"golang.org/x/crypto/chacha20poly1305"
)

// A version 2 checkpoint carries, after its fixed fields, a summary of the
// entries it seals, so that a reader with the identity can tell which
// stretches of the log to decrypt (postern activity --since and --run)
// without opening every entry:
//
//	summary := epk[32] ‖ ChaCha20-Poly1305(summary key of epk's chain, nonce 0,
//	           JSON, additional data: log id ‖ the checkpoint's seq)
//
// The summary is empty when no entry precedes the checkpoint since the one
// before. Its key comes from the chain of the last entry it covers (or from
// a chain of its own), so the writer, which erases chains as it goes,
// cannot read summaries it has written either. The checkpoint's signature
// covers SHA-256 of the summary bytes.

// maxSummaryRuns bounds the run ids a summary lists; beyond it the summary
// says All and readers decrypt the stretch.
const maxSummaryRuns = 256

// Summary says what the entries sealed by one checkpoint mention.
type Summary struct {
	// Entries counts the entries since the previous checkpoint.
	Entries int `json:"entries"`
	// First and Last bound the times of those events.
	First time.Time `json:"first,omitzero"`
	Last  time.Time `json:"last,omitzero"`
	// Runs lists the run ids the events name, sorted, unless All is set.
	Runs []string `json:"runs,omitempty"`
	// All is set when the summary cannot list the runs (too many, or
	// entries a crashed writer left unsealed): every entry must be read.
	All bool `json:"all,omitempty"`
}

// Mentions reports whether the stretch may hold events of run.
func (s *Summary) Mentions(run string) bool {
	if s.All {
		return true
	}
	_, ok := slices.BinarySearch(s.Runs, run)
	return ok
}

// interval gathers the summary of the entries reserved since the last
// checkpoint; Log.mu held.
type interval struct {
	entries     int
	first, last time.Time
	runs        map[string]struct{}
	all         bool
}

func (iv *interval) add(e *Event) {
	if iv.entries == 0 || e.Time.Before(iv.first) {
		iv.first = e.Time
	}
	if iv.entries == 0 || e.Time.After(iv.last) {
		iv.last = e.Time
	}
	iv.entries++
	if e.Run == "" || iv.all {
		return
	}
	if iv.runs == nil {
		iv.runs = map[string]struct{}{}
	}
	iv.runs[e.Run] = struct{}{}
	if len(iv.runs) > maxSummaryRuns {
		iv.all, iv.runs = true, nil
	}
}

// take returns the summary and starts a new interval.
func (iv *interval) take() Summary {
	s := Summary{Entries: iv.entries, First: iv.first.UTC(), Last: iv.last.UTC(), All: iv.all}
	if iv.entries == 0 {
		s.First, s.Last = time.Time{}, time.Time{}
	}
	for r := range iv.runs {
		s.Runs = append(s.Runs, r)
	}
	slices.Sort(s.Runs)
	*iv = interval{}
	return s
}

// pendingSummary is a summary waiting to be sealed into its checkpoint,
// with the chain key that seals it.
type pendingSummary struct {
	Summary
	epk [32]byte
	key [32]byte
}

func summaryAD(logID [16]byte, seq uint64) []byte {
	ad := make([]byte, 0, 24)
	ad = append(ad, logID[:]...)
	return binary.BigEndian.AppendUint64(ad, seq)
}

// seal returns the summary bytes of the checkpoint at seq, and erases the
// key. A nil summary, or one over no entries, is empty.
func (p *pendingSummary) seal(logID [16]byte, seq uint64) ([]byte, error) {
	if p == nil {
		return nil, nil
	}
	defer clear(p.key[:])
	if p.Entries == 0 {
		return nil, nil
	}
	js, err := json.Marshal(&p.Summary)
	if err != nil {
		return nil, err
	}
	aead, err := chacha20poly1305.New(p.key[:])
	if err != nil {
		return nil, err
	}
	var nonce [chacha20poly1305.NonceSize]byte
	out := append(make([]byte, 0, 32+len(js)+chacha20poly1305.Overhead), p.epk[:]...)
	return aead.Seal(out, nonce[:], js, summaryAD(logID, seq)), nil
}

// maxSummarySize bounds the summary bytes a reader accepts.
const maxSummarySize = 32 << 10

func summaryHash(b []byte) [32]byte { return sha256.Sum256(b) }

// openSummary decrypts the summary of the checkpoint at seq.
func openSummary(r *chainReader, logID [16]byte, seq uint64, b []byte) (*Summary, error) {
	if len(b) == 0 {
		return &Summary{}, nil
	}
	if len(b) < 32+chacha20poly1305.Overhead {
		return nil, errors.New("checkpoint summary is too short")
	}
	key, err := r.summaryKey([32]byte(b[:32]))
	if err != nil {
		return nil, err
	}
	js, err := openOnce(&key, b[32:], summaryAD(logID, seq), nil)
	if err != nil {
		return nil, fmt.Errorf("checkpoint seq %d: its summary does not open with this identity", seq)
	}
	var s Summary
	if err := json.Unmarshal(js, &s); err != nil {
		return nil, fmt.Errorf("checkpoint seq %d: summary: %w", seq, err)
	}
	if !slices.IsSorted(s.Runs) {
		return nil, fmt.Errorf("checkpoint seq %d: summary runs are not sorted", seq)
	}
	return &s, nil
}
