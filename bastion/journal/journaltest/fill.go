// Package journaltest fills a command journal for the tests of the
// packages that read it.
package journaltest

import (
	"sync"
	"testing"

	"github.com/postern/postern/bastion/journal"
)

// Fill starts and ends n commands in j, the i-th command(i), at once (so
// that the journal commits them in groups).
func Fill(t testing.TB, j *journal.Journal, n int, command func(i int) []byte) {
	t.Helper()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			e := &journal.Entry{Target: journal.Target{User: "u", Host: "h", Port: 22, HostKey: "SHA256:k"}, Kind: journal.KindExec, Command: command(i)}
			if err := j.Start(e); err != nil {
				t.Error(err)
				return
			}
			if _, err := j.End(e.ID, journal.End{Outcome: journal.OutcomeExited}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}
