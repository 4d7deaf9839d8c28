package sshagent

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/postern/postern/approvals"
)

// A look-up for a signature's message that never ends (a file on a file
// system that does not answer) holds up no card: the card goes on
// without the message, and while maxLookups such look-ups hang, no
// other starts, so that they cannot pile up.
func TestMessageLookupThatHangsHoldsNothingUp(t *testing.T) {
	hang := make(chan struct{})
	defer close(hang)
	var wg sync.WaitGroup
	for range maxLookups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if m := boundedMessage(func() *approvals.SignedMessage { <-hang; return nil }); m != nil {
				t.Error("a look-up that hangs gave a message")
			}
		}()
	}
	wg.Wait()
	var called atomic.Bool
	if m := boundedMessage(func() *approvals.SignedMessage { called.Store(true); return &approvals.SignedMessage{} }); m != nil || called.Load() {
		t.Fatalf("with %d look-ups hanging, another ran (%v)", maxLookups, called.Load())
	}
}

// A command line of many operands (the requester's to write) has no
// more than maxOperands of them looked up, options and empty ones
// never.
func TestMessageLookupTriesBoundedOperands(t *testing.T) {
	argv := []string{"ssh-keygen", "-Y", "", "-"}
	for range 10 * maxOperands {
		argv = append(argv, "file")
	}
	got := operands(argv)
	if len(got) != maxOperands || slices.ContainsFunc(got, func(a string) bool { return a != "file" }) {
		t.Fatalf("operands of a command line of %d arguments: %d, %q", len(argv), len(got), got[:min(len(got), 4)])
	}
}
