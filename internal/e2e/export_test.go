package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/syslog/syslogtest"
)

// With [audit] syslog, every audit event and every checkpoint reaches a
// real rsyslogd as RFC 5424: the event type as the message id, its facts
// as structured data; a checkpoint carries the anchor line, which is also
// written beside the log and shown by status.
func TestAuditEventsGoToSyslog(t *testing.T) {
	need(t, "ssh-keygen")
	d := syslogtest.Start(t)
	e := newEnv(t)
	pass := e.WriteFile("pass", "vault pass\n", 0o600)
	e.MustRun("postern", "vault", "init", "--passphrase-file", pass)
	k := e.Keygen("k", "ed25519", 0, "")
	e.MustRun("postern", "vault", "add", "--passphrase-file", pass, k)
	e.Config(fmt.Sprintf("approval = \"none\"\n[audit]\nsyslog = \"udp:%s\"\nsyslog_facility = \"local3\"\n", d.UDP))
	e.StartAgent()
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
	msg := e.WriteFile("m", "signed", 0o600)
	e.MustRun("ssh-keygen", "-Y", "sign", "-n", "file", "-f", k+".pub", msg)
	e.MustRun("postern", "lock") // a checkpoint seals the log

	lines := d.Wait(t, "the events and a checkpoint", func(ls []syslogtest.Line) bool {
		seen := map[string]bool{}
		for _, l := range ls {
			seen[l.MsgID] = true
		}
		return seen["gateway_started"] && seen["vault_unlocked"] && seen["sign"] && seen["checkpoint"]
	})
	var anchor string
	for _, l := range lines {
		if l.AppName != "postern" || l.Pri != fmt.Sprint(19*8+6) && l.Pri != fmt.Sprint(19*8+5) {
			t.Errorf("header: %+v", l)
		}
		switch l.MsgID {
		case "sign":
			if !strings.Contains(l.Data, `key="`+fingerprint(t, e, k)+`"`) || !strings.Contains(l.Msg, `"type":"sign"`) {
				t.Errorf("sign: %+v", l)
			}
		case "checkpoint":
			a, err := api.ParseAnchor(l.Msg)
			if err != nil || !strings.Contains(l.Data, fmt.Sprintf(`seq="%d"`, a.Seq)) {
				t.Errorf("checkpoint: %+v (%v)", l, err)
			}
			anchor = l.Msg
		}
	}
	st := e.MustRun("postern", "status").Stdout
	if !strings.Contains(st, "anchor: postern-audit-anchor 1 ") || !strings.Contains(st, "syslog udp:"+d.UDP) {
		t.Fatalf("status:\n%s", st)
	}
	if anchor == "" {
		t.Fatal("no checkpoint went to syslog")
	}
	// The anchor file is written on a goroutine of its own, after syslog
	// has the checkpoint: it catches up.
	got, _ := api.ParseAnchor(anchor)
	var file []byte
	for i := 0; ; i++ {
		file, _ = os.ReadFile(e.Path("state", "postern", "audit.anchor"))
		if a, err := api.ParseAnchor(string(file)); err == nil && a.Seq >= got.Seq {
			break
		}
		if i == 6000 {
			t.Fatalf("the anchor file %q never reached syslog's (%d)", file, got.Seq)
		}
		sleep10ms()
	}
}
