package e2e

import (
	"fmt"
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

// The class of a host the inventory has is changed with hosts add
// --class whatever known_hosts holds: any program of the person can take
// a host's lines out of it (ssh-keygen -R), which must not keep the
// person from marking that host production.
func TestHostsClassOfAHostKnownHostsForgot(t *testing.T) {
	w := newInventoryWorld(t)
	e := w.e
	e.MustRun("postern", "hosts", "import", "prod-db-1")
	e.MustRun("sh", "-c", fmt.Sprintf("ssh-keygen -R prod-db-1 -f %s", w.kh))
	r := e.Run("postern", "hosts", "add", "prod-db-1", "--class", "production")
	if r.Code != 0 || !strings.Contains(r.Stdout, "prod-db-1  class production") || !strings.Contains(r.Stdout, hostFingerprint(t, e, w.prod)) {
		t.Fatalf("marking prod-db-1 production: %s", r)
	}
	// A host the inventory does not have still needs its keys.
	if r := e.Run("postern", "hosts", "add", "web-1", "--class", "production"); r.Code != 1 || !strings.Contains(r.Stderr, "no key for web-1") {
		t.Fatalf("a host with no key: %s", r)
	}
}

// A login to a host of the inventory is approved by typing its name out:
// a line planted in known_hosts naming the production host's key "o"
// (the key that approves once on every other card) is not imported, and
// the import says why, naming it.
func TestHostsImportNamesNoHostAsAConsoleAnswer(t *testing.T) {
	w := newInventoryWorld(t)
	e := w.e
	kh := mustRead(t, w.kh)
	e.WriteFile("home/.ssh/known_hosts", "o "+w.prod.HostKey+"\n"+string(kh), 0o600)
	r := e.Run("postern", "hosts", "import")
	if r.Code != 1 || !strings.Contains(r.Stderr, `"o" is an answer the approver consoles take`) || !strings.Contains(r.Stderr, "1 of 1 hosts not added") {
		t.Fatalf("hosts import of a host named \"o\": %s", r)
	}
	if r := e.MustRun("postern", "hosts", "list", "--json"); strings.Contains(r.Stdout, `"name": "o"`) {
		t.Fatalf("the production key was named \"o\": %s", r.Stdout)
	}
}
