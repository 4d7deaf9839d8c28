package gateway

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/atomicfile"
	"github.com/postern/postern/internal/config"
	"github.com/postern/postern/internal/vault"
)

// The approved configuration in the state directory is a file like any
// other: a program of the user's outside every sandbox can rewrite it to
// match a looser config.toml, or delete it, and the next start would
// take the file as approved. So the gateway also seals the approved
// configuration into the vault whenever it is unlocked, and at each
// unlock compares: the sealed copy wins over the state directory's, and
// the file is judged against it again (a loosening waits for a card). A
// vault is locked at start, so no key signs before that comparison. With
// no vault there is nothing to seal into, and the state directory's copy
// is all there is.

// sealedConfigPrefix starts the sealed value, so that an approved
// configuration with no file (the defaults) is told from no value.
const sealedConfigPrefix = "postern-approved-config 1\n"

// sealApproved seals the approved configuration in force now into the
// vault, if it is unlocked. Saves are serialized, each taking the value
// current when it runs, so the last one seals the latest approval.
func (g *Gateway) sealApproved() {
	g.sealMu.Lock()
	defer g.sealMu.Unlock()
	g.mu.Lock()
	raw := g.approvedRaw
	g.mu.Unlock()
	if !g.seal(api.SecretApprovedConfig, append([]byte(sealedConfigPrefix), raw...), "the approved configuration") {
		return
	}
	g.mu.Lock()
	if bytes.Equal(g.approvedRaw, raw) {
		g.unsealed, g.approvedOver = false, nil
	}
	g.mu.Unlock()
}

// seal seals value into the vault as name, if it is unlocked, says when
// it cannot, and reports whether the vault holds value.
func (g *Gateway) seal(name string, value []byte, what string) bool {
	sealed, err := g.vault.sealSecret(name, value)
	switch {
	case errors.Is(err, errNewerSealed):
		g.log.Warn(what+" sealed in the vault is a newer postern's: it is left as it is, and this gateway seals none over it", "err", err)
	case err != nil:
		g.log.Warn("cannot seal "+what+" into the vault: the next unlock puts back the one sealed before", "err", err)
	}
	return sealed && err == nil
}

// errNewerSealed refuses to seal a value over one a newer postern sealed
// in a version of its form this one does not read: going back to that
// postern, it finds its own.
var errNewerSealed = errors.New("a newer postern sealed it, in a form this one does not read")

// newerSealed reports whether old, a value sealed in the vault, is of the
// kind of value in a later version (the first two words of each, such as
// "postern-host-inventory 1"), and that version.
func newerSealed(old, value []byte) (int, bool) {
	kind := func(b []byte) (string, int, bool) {
		line, _, _ := bytes.Cut(b, []byte("\n"))
		f := strings.Fields(string(line))
		if len(f) < 2 {
			return "", 0, false
		}
		n, err := strconv.Atoi(f[1])
		return f[0], n, err == nil
	}
	ok, ov, okOld := kind(old)
	nk, nv, okNew := kind(value)
	return ov, okOld && okNew && ok == nk && ov > nv
}

// adoptSealedPolicy is called at unlock, with the vault v open and
// before its keys load: the approved configuration sealed in v becomes
// the approved one, and the file is judged against it.
func (g *Gateway) adoptSealedPolicy(v *vault.Vault) {
	raw, ok := sealedIn(v, api.SecretApprovedConfig, sealedConfigPrefix, g.sealApproved)
	if !ok {
		return
	}
	if len(raw) == 0 {
		raw = nil
	}
	g.judgeMu.Lock()
	defer g.judgeMu.Unlock()
	g.mu.Lock()
	if bytes.Equal(raw, g.approvedRaw) {
		g.unsealed, g.approvedOver = false, nil
		g.mu.Unlock()
		return
	}
	if g.unsealed && bytes.Equal(raw, g.approvedOver) {
		// The approved configuration differs from the sealed one only
		// by changes this gateway put in force over it while the vault
		// was locked (a card a person approved, a tightening): they are
		// sealed now, not undone and asked about again.
		g.mu.Unlock()
		g.log.Info("the configuration approved while the vault was locked is sealed into it now", "path", g.approvedPath())
		go g.sealApproved()
		return
	}
	approved := config.Defaults()
	if raw != nil {
		var err error
		if approved, err = parseApproved("the approved configuration sealed in the vault", raw); err != nil {
			g.mu.Unlock()
			g.log.Error("the approved configuration sealed in the vault does not parse; the state directory's stays approved", "err", err)
			return
		}
	}
	g.approved, g.approvedRaw = approved, raw
	g.unsealed, g.approvedOver = false, nil
	g.restored = "the approved configuration in the state directory was not the one sealed in the vault; the vault's was put back at " + time.Now().UTC().Format(time.RFC3339)
	g.mu.Unlock()
	g.log.Warn("the approved configuration in the state directory is not the one sealed in the vault: the vault's is approved, and the configuration file is judged against it",
		"path", g.approvedPath())
	if err := atomicfile.Write(g.approvedPath(), raw, 0o600); err != nil {
		g.log.Warn("cannot keep the approved configuration", "err", err)
	}
	g.engine.Record(audit.Event{Type: audit.EventPolicyRestored, Detail: map[string]string{"path": g.approvedPath()}})
	// The upstream agent was chosen at start, from the copy now found
	// rewritten: adds and removes (keys handed to it) stop unless the
	// sealed copy forwards them; one from another socket than the
	// sealed copy names (not --upstream's) is used no more, so that
	// the agent of whoever rewrote the copy sees no request the person
	// approves, until a restart picks the approved one.
	if up := g.agent.Upstream; up != nil {
		if approved.UpstreamChanges != "forward" {
			up.HoldChanges()
		}
		if g.opts.Upstream == "" && approved.Upstream != g.startUpstream {
			up.Stop()
			g.log.Warn("the upstream agent in use is not the approved one: its keys are not used; restart the gateway to use the approved one", "in_use", up.Socket, "approved", approved.Upstream)
		}
	}
	// So was the syslog address: the events leave the log's encryption
	// there.
	g.holdExport(approved.Audit)
	// And the bastion, with the known_hosts files it verifies real
	// hosts with.
	g.holdBastion(approved)
	// The file, missing or not, is judged against the approved one; one
	// that does not read leaves the approved policy in force.
	cfg, now, err := readConfig(g.configPath)
	if err == nil {
		_, err = approvals.Compile(cfg)
	}
	g.mu.Lock()
	if err != nil {
		// A card shown before was judged against the copy put aside.
		g.pending, g.pendingRaw = nil, nil
		pol, cerr := approvals.Compile(approved)
		if cerr == nil {
			g.config, g.configErr = approved, err
		}
		g.mu.Unlock()
		g.engine.WithdrawPolicy(audit.ReasonApprovedRestored)
		if cerr == nil {
			g.engine.SetPolicy(pol)
		}
		return
	}
	g.judge(cfg, now)
}

// sealedIn returns a copy of what is sealed in v as name, after its
// prefix. When nothing is (a new vault, or one from before sealing), it
// returns false, and has seal seal what is in force once the unlock is
// done.
func sealedIn(v *vault.Vault, name, prefix string, seal func()) ([]byte, bool) {
	sec := v.Secret(name)
	defer clear(sec)
	raw, ok := bytes.CutPrefix(sec, []byte(prefix))
	if !ok {
		// None sealed yet is sealed now; one a newer postern sealed is
		// not sealed over (seal says so).
		go seal()
		return nil, false
	}
	return bytes.Clone(raw), true
}

// checkOpened runs at every unlock, before the vault's keys load.
func (g *Gateway) checkOpened(v *vault.Vault) error {
	if err := g.checkSealedAnchor(v); err != nil {
		return err
	}
	g.adoptSealedPolicy(v)
	g.adoptSealedHosts(v)
	return nil
}
