package gateway

import (
	"encoding/json"
	"strconv"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/config"
	"github.com/postern/postern/internal/syslog"
)

// With [audit] syslog set, every event the audit log recorded, and every
// checkpoint, goes to a syslog daemon too (RFC 5424), for people who ship
// logs to a log platform: an event after it is durable in the log, a
// checkpoint with the chain head it sealed, which the platform keeps as
// an anchor beyond the reach of whoever can write the log. The export
// never holds up the gateway: a daemon that does not keep up loses
// messages, counted in status; the audit log loses none.

// sdID names postern's structured data (32473 is the enterprise number
// RFC 5612 reserves for documentation and examples).
const (
	sdEvent  = "postern@32473"
	sdAnchor = "postern-anchor@32473"
)

// startExport dials the syslog daemon the configuration names, if any.
func (g *Gateway) startExport() error {
	cfg := g.config.Audit
	if cfg.Syslog == "" {
		return nil
	}
	fac, err := syslog.ParseFacility(cfg.SyslogFacility)
	if err != nil {
		return err
	}
	w, err := syslog.Dial(syslog.Config{Address: cfg.Syslog, Facility: fac, AppName: "postern"})
	if err != nil {
		return err
	}
	g.export, g.exportAddr, g.exportFac = w, cfg.Syslog, cfg.SyslogFacility
	g.log.Info("audit events also go to syslog", "address", cfg.Syslog, "facility", cfg.SyslogFacility)
	return nil
}

// eventMessage is an audit event as a syslog message: its type as the
// message id, its main fields as structured data, all of it as JSON.
func eventMessage(e audit.Event) syslog.Message {
	sev := syslog.Info
	switch e.Type {
	case audit.EventActionDenied, audit.EventCommandUnknown, audit.EventJournalDamaged, audit.EventLogRecovered:
		sev = syslog.Notice
	}
	var params [][2]string
	for _, p := range [][2]string{
		{"boot", e.BootID}, {"epoch", strconv.FormatUint(e.VaultEpoch, 10)}, {"run", e.Run}, {"grant", e.Grant},
		{"card", e.Card}, {"key", e.Key}, {"dest", e.Dest}, {"mode", string(e.Mode)}, {"reason", string(e.Reason)},
	} {
		if p[1] != "" {
			params = append(params, p)
		}
	}
	text, _ := json.Marshal(e)
	return syslog.Message{Time: e.Time, Severity: sev, MsgID: string(e.Type), Data: []syslog.Element{{ID: sdEvent, Params: params}}, Text: string(text)}
}

// anchorMessage is a checkpoint's chain head as a syslog message; its
// text is the anchor line "postern audit verify --anchor" reads.
func anchorMessage(a audit.Anchor) syslog.Message {
	return syslog.Message{Severity: syslog.Info, MsgID: "checkpoint",
		Data: []syslog.Element{{ID: sdAnchor, Params: [][2]string{{"log", a.LogID}, {"seq", strconv.FormatUint(a.Seq, 10)}, {"link", a.Link}}}},
		Text: api.FormatAnchor(a)}
}

// exporting reports whether events go to a syslog daemon: there is an
// export and it is not held.
func (g *Gateway) exporting() bool { return g.export != nil && !g.exportHeld.Load() }

// exportSend sends m to the syslog daemon, if events go there.
func (g *Gateway) exportSend(m syslog.Message) {
	if g.exporting() {
		g.export.Send(m)
	}
}

// holdExport stops the export, whose address or facility is not
// approved's, until the gateway restarts.
func (g *Gateway) holdExport(approved config.Audit) {
	if g.export == nil || approved.Syslog == g.exportAddr && approved.SyslogFacility == g.exportFac {
		return
	}
	g.exportHeld.Store(true)
	g.log.Warn("audit events go to syslog no more: the address or facility in use is not the approved one; restart the gateway to use the approved one",
		"in_use", g.exportAddr, "facility", g.exportFac, "approved", approved.Syslog, "approved_facility", approved.SyslogFacility)
}

// exportStatus reports the export for status.
func (g *Gateway) exportStatus() *api.SyslogStatus {
	if g.export == nil {
		return nil
	}
	st := &api.SyslogStatus{Address: g.exportAddr, Sent: g.export.Sent(), Dropped: g.export.Dropped()}
	if err := g.export.Err(); err != nil {
		st.Error = err.Error()
	}
	if g.exportHeld.Load() {
		st.Error = "stopped: not the approved address or facility; restart the gateway to use the approved one"
	}
	return st
}
