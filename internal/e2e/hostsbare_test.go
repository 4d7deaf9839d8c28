package e2e

import (
	"os"
	"strings"
	"testing"
)

// A known_hosts line with no host field names no host (ssh passes it
// over): one planted in the configured known_hosts, holding the
// production host's key, is not taken for the name a person adds, which
// would have named production after another host and left its own name
// refused ("the key already belongs to another host").
func TestHostsAddTakesNoBareLineFromKnownHosts(t *testing.T) {
	w := newInventoryWorld(t)
	e := w.e
	f, err := os.OpenFile(w.kh, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(w.prod.HostKey + "\n")
	f.Close()
	prodFP := hostFingerprint(t, e, w.prod)
	r := e.MustRun("postern", "hosts", "add", "git-host")
	if strings.Contains(r.Stdout, prodFP) {
		t.Fatalf("git-host took the key of a known_hosts line with no host field:\n%s", r)
	}
	if r := e.Run("postern", "hosts", "add", "prod-db-1", "--class", "production"); r.Code != 0 || !strings.Contains(r.Stdout, "prod-db-1  class production") {
		t.Fatalf("prod-db-1 refused: %s", r)
	}
}
