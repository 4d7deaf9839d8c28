package audit

import (
	"crypto/ed25519"
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// Checkpoint payload: epoch ‖ time ‖ next public key ‖ max unsealed ‖
// signature, and in version 2 the summary (summary.go) after them.
const checkpointPayloadSize = 8 + 8 + ed25519.PublicKeySize + 4 + ed25519.SignatureSize

// checkpoint is the decoded payload of a checkpoint record.
type checkpoint struct {
	version     byte
	epoch       uint64
	time        int64 // unix nanoseconds
	nextPK      [32]byte
	maxUnsealed uint32 // the writer checkpoints again before more entries than this follow; 0 = no limit
	sig         [64]byte
	summary     []byte // version 2: the sealed summary, possibly empty
}

func (c *checkpoint) marshal() []byte {
	b := make([]byte, 0, checkpointPayloadSize+len(c.summary))
	b = binary.BigEndian.AppendUint64(b, c.epoch)
	b = binary.BigEndian.AppendUint64(b, uint64(c.time))
	b = append(b, c.nextPK[:]...)
	b = binary.BigEndian.AppendUint32(b, c.maxUnsealed)
	b = append(b, c.sig[:]...)
	return append(b, c.summary...)
}

func parseCheckpoint(version byte, p []byte) (checkpoint, error) {
	c := checkpoint{version: version}
	switch {
	case version == version1 && len(p) != checkpointPayloadSize:
		return c, fmt.Errorf("checkpoint payload is %d bytes, want %d", len(p), checkpointPayloadSize)
	case len(p) < checkpointPayloadSize:
		return c, fmt.Errorf("checkpoint payload is %d bytes, want at least %d", len(p), checkpointPayloadSize)
	case len(p) > checkpointPayloadSize+maxSummarySize:
		return c, fmt.Errorf("checkpoint summary is %d bytes, the limit is %d", len(p)-checkpointPayloadSize, maxSummarySize)
	}
	c.epoch = binary.BigEndian.Uint64(p[0:8])
	c.time = int64(binary.BigEndian.Uint64(p[8:16]))
	copy(c.nextPK[:], p[16:48])
	c.maxUnsealed = binary.BigEndian.Uint32(p[48:52])
	copy(c.sig[:], p[52:116])
	if len(p) > checkpointPayloadSize {
		c.summary = p[checkpointPayloadSize:]
	}
	return c, nil
}

// signedMessage is what the key of c.epoch signs for the checkpoint record
// at seq whose prev field is head (the chain head just before it). In
// version 2 it also covers the summary.
func (c *checkpoint) signedMessage(logID [16]byte, seq uint64, head [32]byte) []byte {
	b := make([]byte, 0, len(checkpointDomainV2)+16+8+8+32+8+32+4+32)
	if c.version == version1 {
		b = append(b, checkpointDomain...)
	} else {
		b = append(b, checkpointDomainV2...)
	}
	b = append(b, logID[:]...)
	b = binary.BigEndian.AppendUint64(b, c.epoch)
	b = binary.BigEndian.AppendUint64(b, seq)
	b = append(b, head[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(c.time))
	b = append(b, c.nextPK[:]...)
	b = binary.BigEndian.AppendUint32(b, c.maxUnsealed)
	if c.version != version1 {
		h := summaryHash(c.summary)
		b = append(b, h[:]...)
	}
	return b
}

// Checkpoint seals every entry whose Append has returned: it appends a
// checkpoint signed with the current key, committing to the next key, makes
// it durable, and erases the current key. It does nothing when no entry is
// unsealed. Call it after recording a vault lock or unlock.
func (l *Log) Checkpoint() error {
	l.mu.Lock()
	if l.failed != nil {
		err := l.failed
		l.mu.Unlock()
		return fmt.Errorf("audit checkpoint: %w", err)
	}
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.inflight.Add(1)
	l.mu.Unlock()
	done := make(chan error, 1)
	l.w.requestCheckpoint(done)
	l.inflight.Done()
	if err := <-done; err != nil {
		return fmt.Errorf("audit checkpoint: %w", err)
	}
	return nil
}

// requestCheckpoint makes sure everything written so far gets sealed, and
// answers done once it is.
func (w *writer) requestCheckpoint(done chan error) {
	l := w.l
	l.mu.Lock()
	if l.failed != nil {
		err := l.failed
		l.mu.Unlock()
		answer(done, err)
		return
	}
	if l.sinceCP > 0 {
		seq := l.nextSeq
		l.nextSeq++
		l.sinceCP = 0
		l.lastCP = seq
		sum := l.takeSummary()
		l.mu.Unlock()
		w.submit(&item{kind: itemCheckpoint, seq: seq, sum: sum, done: done})
		return
	}
	last := l.lastCP
	l.mu.Unlock()
	if w.waitHook != nil {
		w.waitHook()
	}
	w.cmu.Lock()
	defer w.cmu.Unlock()
	// A writer that failed since answered the waiters it had: this one
	// would wait for ever.
	if err := w.failure(); err != nil {
		answer(done, err)
		return
	}
	if last >= w.durable {
		w.cpWaiters[last] = append(w.cpWaiters[last], done)
		return
	}
	answer(done, nil)
}

// addCheckpoint builds checkpoint epoch k: signed by key k over the log id,
// the epoch, its seq, the chain head before it, its time, the public half of
// key k+1, the unsealed limit and the summary of the entries it seals.
func (w *writer) addCheckpoint(sum *pendingSummary) error {
	t := w.now().UnixNano()
	if t < w.lastTime {
		t = w.lastTime // wall clock stepped back: keep checkpoint times monotonic
	}
	sealed, err := sum.seal(w.logID, w.seq)
	if err != nil {
		return err
	}
	c := checkpoint{version: version2, epoch: w.keys.epoch, time: t, nextPK: pub32(w.keys.next), maxUnsealed: w.maxUnsealed, summary: sealed}
	copy(c.sig[:], ed25519.Sign(w.keys.cur, c.signedMessage(w.logID, w.seq, w.head)))
	w.buf, w.head = w.lk.appendFrame(w.buf, recCheckpoint, w.seq, w.head, c.marshal())
	w.seq++
	w.lastTime = t
	w.unsealed = 0
	return nil
}

// rotate erases the key that just signed a durable checkpoint: the key file
// moves on to the next key and a fresh one after it.
func (w *writer) rotate() error {
	nk := w.keys.advance()
	w.keys = nk
	if err := writeKeyFile(w.keyFile, nk); err != nil {
		return fmt.Errorf("audit log %s: checkpoint epoch %d is written but the key file could not move on: %w; the log refuses appends until it is reopened", w.path, nk.epoch-1, err)
	}
	return nil
}

func (w *writer) notifyCheckpoint(seq uint64, link [32]byte) {
	if w.l.onCheckpoint != nil {
		w.l.onCheckpoint(Anchor{LogID: hex.EncodeToString(w.logID[:]), Seq: seq, Link: hex.EncodeToString(link[:])})
	}
}
