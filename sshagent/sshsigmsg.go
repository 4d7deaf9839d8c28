package sshagent

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"hash"
	"io"
	"os"
	"strings"
	"time"

	"github.com/postern/postern/approvals"
)

// What findMessage reads: a message larger than maxMessage, a command
// line naming more than maxOperands files, and a line longer than
// maxHeadLine, are not read (past it).
const (
	maxMessage  = 1 << 20
	maxOperands = 16
	maxHeadLine = 1024
)

// Looking for a message reads files the requester chose, which may be
// on a file system that answers slowly or never (a FUSE mount of its
// own): a card waits at most messageWait for the look-up, and at most
// maxLookups run at once, so that look-ups that never end hold no more.
const (
	messageWait = 2 * time.Second
	maxLookups  = 4
)

var lookups = make(chan struct{}, maxLookups)

// boundedMessage runs find, and returns its message if it ends within
// messageWait and fewer than maxLookups others are under way; nil
// otherwise (the card then says the message is not known).
func boundedMessage(find func() *approvals.SignedMessage) *approvals.SignedMessage {
	select {
	case lookups <- struct{}{}:
	default:
		return nil
	}
	done := make(chan *approvals.SignedMessage, 1)
	go func() {
		defer func() { <-lookups }()
		done <- find()
	}()
	t := time.NewTimer(messageWait)
	defer t.Stop()
	select {
	case m := <-done:
		return m
	case <-t.C:
		return nil
	}
}

// messageOf returns the message f holds, for display, when its hash by
// alg is want: its size and first lines. f is read only as a regular
// file of at most maxMessage bytes.
func messageOf(f *os.File, name, alg string, want []byte) *approvals.SignedMessage {
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() > maxMessage {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(f, maxMessage+1))
	if err != nil || len(b) > maxMessage {
		return nil
	}
	var h hash.Hash
	switch alg {
	case "sha256":
		h = sha256.New()
	case "sha512":
		h = sha512.New()
	default:
		return nil
	}
	h.Write(b)
	if !bytes.Equal(h.Sum(nil), want) {
		return nil
	}
	return &approvals.SignedMessage{Path: name, Size: int64(len(b)), Head: approvals.MessageHead(b, maxHeadLine)}
}

// operands returns the arguments of argv that may name the message
// file (those that are not options), at most maxOperands.
func operands(argv []string) []string {
	var out []string
	for _, a := range argv[min(1, len(argv)):] {
		if a == "" || strings.HasPrefix(a, "-") {
			continue
		}
		if out = append(out, a); len(out) == maxOperands {
			break
		}
	}
	return out
}
