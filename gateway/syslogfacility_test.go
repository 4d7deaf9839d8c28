package gateway

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/xdg"
)

// The facility decides which of the syslog daemon's rules take the audit
// log's events (those that ship authpriv off the machine, say): a
// facility the approved configuration did not name is as much a change of
// where the events go as another address, and a restart puts it in force
// only once a person approves its card.
func TestRestartWithAnotherSyslogFacilityWaitsForACard(t *testing.T) {
	approved := authprivExport(t)
	dir := gatewayHome(t)
	cfg := configFile(t, dir)
	if err := os.WriteFile(cfg, []byte(approved), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, stop := runGateway(t, dir)
	stop()

	rewritten := strings.Replace(approved, "authpriv", "local7", 1)
	if err := os.WriteFile(cfg, []byte(rewritten), 0o600); err != nil {
		t.Fatal(err)
	}
	g, _, _ := runGateway(t, dir)
	st := g.Status()
	if got := g.config.Audit.SyslogFacility; got != "authpriv" || !strings.Contains(strings.Join(st.Config.Pending, "; "), "syslog_facility") {
		t.Fatalf("after a restart with syslog_facility rewritten to local7: facility %q in force, pending changes %q; want authpriv in force and the change waiting for a card", got, st.Config.Pending)
	}
}

// With a vault, a gateway that started with a facility from a rewritten
// approved copy stops sending once the unlock finds the sealed copy names
// another, as it does for another address.
func TestSealedPolicyUnapprovedSyslogFacility(t *testing.T) {
	approved := authprivExport(t)
	pass := []byte("seal pass")
	dir, cfg, vaultPath := sealedConfig(t, pass, approved)
	rewritten := strings.Replace(approved, "authpriv", "local7", 1)
	os.WriteFile(cfg, []byte(rewritten), 0o600)
	os.WriteFile(filepath.Join(filepath.Dir(vaultPath), xdg.ApprovedConfigFile), []byte(rewritten), 0o600)

	g, sock, _ := runGateway(t, dir)
	unlockGateway(t, sock, pass)
	st := waitStatus(t, g, "after the unlock", func(st api.Status) bool { return st.Config.Restored != "" })
	if st.Audit.Syslog == nil || !strings.Contains(st.Audit.Syslog.Error, "stopped") {
		t.Fatalf("after the unlock put back the sealed copy (facility authpriv), the export with facility local7 goes on: %+v", st.Audit.Syslog)
	}
}

// authprivExport returns a configuration that sends the audit events to
// a syslog daemon on loopback, which the test's end closes, at facility
// authpriv.
func authprivExport(t *testing.T) string {
	t.Helper()
	daemon, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { daemon.Close() })
	return "approval = \"per-call\"\n[audit]\nsyslog = \"udp:" + daemon.LocalAddr().String() + "\"\nsyslog_facility = \"authpriv\"\n"
}
