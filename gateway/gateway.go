// Package gateway assembles the postern daemon: the agent socket served
// by sshagent, the control socket the command line talks to, the vault
// and its lock state, the approval engine and the configuration it is
// built from, the audit log and the bastion. It is the only package that
// wires these together, and cmd/postern uses it only to start the
// daemon; everything else the command line does goes through the
// contract in gateway/api.
//
// The gateway mints a random boot id when it starts. It lives in memory
// only: after a restart nothing that was bound to the old boot id can
// match again.
//
// New builds a gateway and Run serves it (gateway.go). The rest, a file
// each: serve.go listens on the agent and control sockets; runs.go
// serves every run's own agent socket; control.go answers the control
// socket and turns Go errors into the contract's codes, with one method
// per operation in handlers.go; vaultstate.go is the vault's lock state
// machine, epoch.go its epoch counter; audit.go records the gateway's own
// events; bastion.go starts the bastion; watch.go follows the vault and
// configuration files, config.go reloads the configuration.
package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/askpass"
	"github.com/postern/postern/internal/atomicfile"
	"github.com/postern/postern/internal/config"
	"github.com/postern/postern/internal/control"
	"github.com/postern/postern/internal/heldsig"
	"github.com/postern/postern/internal/idletrim"
	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/syslog"
	"github.com/postern/postern/internal/xdg"
	"github.com/postern/postern/sshagent"
)

// Options configure a gateway.
type Options struct {
	// Socket is the path of the agent socket. The control socket is
	// created beside it (api.ControlSocket).
	Socket string
	// Listener, when not nil, is the agent socket already listening,
	// made by a service manager (socket activation,
	// safesocket.Inherited): the gateway serves it and leaves the file to
	// the manager that made it. Socket is then its path.
	Listener *net.UnixListener
	// Lifetime is the default lifetime of keys added with ssh-add.
	Lifetime time.Duration
	// Providers is the allow-list of FIDO and PKCS#11 provider libraries
	// (postern agent -P); empty means sshagent.DefaultProviders.
	Providers string
	// Upstream is the socket of an agent whose keys the gateway lists
	// and gates (postern agent --upstream); empty means the
	// configuration's upstream, if any.
	Upstream string
	Log      *slog.Logger
	// Env is the environment askpass programs run with.
	Env askpass.Env
	// Ready, if set, is called once every socket listens.
	Ready func()
}

// Gateway is a running postern daemon.
type Gateway struct {
	opts    Options
	log     *slog.Logger
	bootID  string
	started time.Time
	// interpreter is the dynamic loader that started the gateway, ""
	// for a static program (see noteLoader).
	interpreter string
	procs       *procid.Table
	keys        *sshagent.Keyring
	vault       *vaultState
	engine      *approvals.Engine
	notes       *notifier
	agent       *sshagent.Server
	// SIGHUP and SIGUSR1, acted on (onSignal) as they arrive (Run) and
	// before each agent request. The order in which the gateway's locks
	// are taken: doc/locking.md.
	signals *heldsig.Queue
	ctl     *control.Server
	ops     map[api.Op]handler
	streams map[api.Op]streamHandler

	configPath string
	askpass    *askpass.Pinned
	// exe is the gateway's own executable as it started ("" when it
	// cannot be found): the person's next console and the next gateway
	// run it, so confined runs see it read-only.
	exe         string
	vaultPath   string
	watchEvents atomic.Uint64 // file events the watcher took in (see watch)
	stateDir    string
	auditMu     sync.Mutex
	audit       *auditLog      // nil until set up; see currentAudit
	auditOpened audit.Anchor   // the log's end when the gateway opened it
	auditFound  *audit.Log     // the log as the gateway opened it
	export      *syslog.Writer // [audit] syslog: nil when off
	exportAddr  string         // its address
	exportFac   string         // and its facility
	anchors     *anchorKeeper
	journal     atomic.Pointer[journalState] // nil without a bastion
	limits      *limits

	srv      *servers // set by Run
	agentL   *net.UnixListener
	ctlL     *net.UnixListener
	bastionL *net.UnixListener
	// bastionConns counts the bastion socket's connections being served
	// (or refused).
	bastionConns sync.WaitGroup
	runMu        sync.Mutex
	runLs        map[string]*net.UnixListener // run id -> the run's agent socket

	mu             sync.Mutex
	config         config.File // in force: the approved one, or the strictest of it and the file
	configErr      error
	configFromFile bool // the policy in force came from a file, not the defaults

	hostsMu   sync.Mutex // serializes changes of the host inventory
	hostsPath string
	hostsErr  error // why the inventory file could not be read (g.mu)
	// hostsRestored says when an unlock put back the inventory sealed in
	// the vault over a rewritten file (g.mu).
	hostsRestored string
	sealHostsMu   sync.Mutex // serializes sealHosts
	// approved is the configuration a person approved (or that loosened
	// nothing); pending lists how the file loosens it, while a policy
	// change card waits.
	approved    config.File
	approvedRaw []byte
	pending     []string
	pendingRaw  []byte
	// restored says when the approved configuration sealed in the vault
	// replaced a different one in the state directory.
	restored string
	// approvedOver is the approved configuration approvedRaw descends
	// from by changes this gateway put in force (a card a person
	// approved, a change that only tightens) since it last sealed one or
	// compared it with the sealed copy; unsealed says it is set (g.mu).
	approvedOver []byte
	unsealed     bool
	sealMu       sync.Mutex // serializes sealApproved
	// judgeMu serializes what reads the configuration file and puts a
	// policy in force (a reload, a policy change card's approval, an
	// unlock's comparison with the sealed copy): each one's read, judgement
	// and policy come after the previous one's, never in between. Taken
	// before g.mu.
	judgeMu sync.Mutex
	// startUpstream is the upstream setting the gateway started with.
	startUpstream string
	// exportHeld stops the export for good: an unlock found its address
	// ([audit] syslog) not the approved one (sealedpolicy.go).
	exportHeld atomic.Bool
	// bastionStarted is what the bastion started with (nil without
	// one); bastionHeld, when an unlock found that the approved
	// configuration does not approve it, is since when it refuses its
	// connections for good.
	bastionStarted *bastionStart
	bastionHeld    atomic.Pointer[time.Time]
}

// newBootID returns 128 random bits in hex.
func newBootID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// New prepares a gateway: it reads the configuration (an invalid file is
// an error at start) and locates the vault. Nothing listens yet.
func New(opts Options) (*Gateway, error) {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Env == nil {
		opts.Env = askpass.FromProcess()
	}
	if opts.Listener != nil {
		opts.Socket = opts.Listener.Addr().String()
	}
	stateDir, err := xdg.StateDir()
	if err != nil {
		return nil, err
	}
	if err := xdg.EnsureDir(stateDir); err != nil {
		return nil, fmt.Errorf("creating the state directory: %w", err)
	}
	// A write a crash interrupted leaves a temporary file; one old enough
	// is no write in progress.
	if removed, _ := atomicfile.RemoveTemps(stateDir, "", time.Minute); len(removed) > 0 {
		opts.Log.Info("removed temporary files an interrupted write left", "dir", stateDir, "files", removed)
	}
	cfgPath, err := xdg.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg, raw, err := readConfig(cfgPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", api.ErrBadConfig, err)
	}
	g := &Gateway{
		opts:       opts,
		log:        opts.Log,
		bootID:     newBootID(),
		started:    time.Now(),
		procs:      procid.Host,
		configPath: cfgPath,
		runLs:      map[string]*net.UnixListener{},
		vaultPath:  filepath.Join(stateDir, xdg.VaultFile),
		stateDir:   stateDir,
		config:     cfg,
	}
	g.signals = heldsig.NewQueue(g.onSignal, syscall.SIGHUP, syscall.SIGUSR1)
	if _, err := os.Stat(cfgPath); err == nil {
		g.configFromFile = true
	}
	g.keys = &sshagent.Keyring{DefaultLifetime: opts.Lifetime}
	g.vault = &vaultState{
		path:  g.vaultPath,
		keys:  g.keys,
		epoch: loadEpoch(filepath.Join(stateDir, xdg.EpochFile)),
		log:   g.log.Info,
		warn:  g.log.Warn,
	}
	if err := g.vault.epoch.Err(); err != nil {
		g.log.Error("vault epoch file not read", "err", err)
	}
	g.vault.checkOpened = g.checkOpened
	g.vault.beforeLock = func() {
		if g.currentAudit() != nil { // then g.anchors is set
			g.anchors.flush()
		}
	}
	if exe, err := os.Executable(); err == nil {
		g.exe, _ = filepath.EvalSymlinks(exe)
	}
	g.noteLoader()
	// The askpass program is pinned now: a program rewritten later is
	// never asked.
	var pinned string // the program's path, set before any question is asked
	g.askpass = askpass.Pin(opts.Env, func(err error) {
		// Called with the pin's lock held: Status would wait for it.
		g.log.Error("askpass approvals are off", "err", err)
		if rerr := g.engine.Record(audit.Event{Type: audit.EventAskpassChanged, Detail: map[string]string{"path": pinned, "error": err.Error()}}); rerr != nil {
			g.log.Error("askpass approvals turned off, not recorded", "err", rerr)
		}
	})
	pinned, _, _ = g.askpass.Status()
	pol, err := g.initialPolicy(cfg, raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", api.ErrBadConfig, err)
	}
	g.notes = newNotifier(g)
	g.engine = approvals.NewEngine(approvals.Config{
		Procs:           g.procs,
		Log:             g.log,
		BootID:          g.bootID,
		Vault:           g.vault.lockedEpoch,
		Policy:          pol,
		Hosts:           g.loadHosts(),
		Askpass:         g.askpass,
		Approvers:       []approvals.Approver{g.notes},
		RequireApprover: true,
		ContextFile:     filepath.Join(stateDir, xdg.ContextFile),
		OnRunEnd:        g.closeRun,
	})
	g.vault.onChange = append(g.vault.onChange, func(_, epoch uint64, why audit.Reason) error {
		g.engine.EpochChanged(g.vault.locked)
		return g.recordVault(epoch, why, g.vault.locked)
	})
	g.startUpstream = g.config.Upstream
	up, err := upstreamAgent(opts, g.config)
	if err != nil {
		return nil, err
	}
	if home, _ := os.UserHomeDir(); up != nil && upstreamHiddenAlone(up.Socket, home, os.Getenv("XDG_RUNTIME_DIR")) {
		g.log.Warn("confined runs are kept from the upstream agent's socket only as the file it is when each starts: one the upstream makes anew meanwhile is within their reach; give the upstream a directory of its own", "upstream", up.Socket)
	}
	g.limits = newLimits()
	g.agent = &sshagent.Server{
		Keys:      g.keys,
		Decider:   g.engine,
		Locker:    g.vault,
		Procs:     g.procs,
		Log:       g.log,
		Providers: opts.Providers,
		Why:       g.why,
		Upstream:  up,
		// A touch, or an upstream agent's own confirmation, waits as
		// long as a card: card_timeout, as reloaded.
		TouchTimeout: func() time.Duration { return g.engine.Policy().CardTimeout },
		Limits:       g.limits.agent,
		Exhausted:    g.exhausted,
		Record:       g.engine.Record,
		Before:       g.signals.Take,
	}
	g.keys.Expired = func(ids []*sshagent.Identity) { g.recordKeysGone(ids, audit.ReasonExpired) }
	g.ops, g.streams = g.handlers(), g.streamHandlers()
	g.ctl = &control.Server{Procs: g.procs, Log: g.log, Handle: g.answerControl, Limits: g.limits.control, Exhausted: g.exhausted, Refuse: refuseControl}
	return g, nil
}

// BootID returns the gateway's boot id.
func (g *Gateway) BootID() string { return g.bootID }

// Run serves until ctx is done: it opens the audit log, listens on the
// agent and control sockets, serves the runs still alive from before a
// restart and the bastion, and follows the vault and configuration
// files. SIGHUP reloads the configuration; SIGUSR1 wipes the keys and revokes every grant.
func (g *Gateway) Run(ctx context.Context) error {
	// Caught from the start: SIGHUP would otherwise end the process.
	defer g.signals.Catch()()

	// Between bursts of work (a login, a signing loop, a read of the
	// history) the memory they left is given back to the system.
	trim := idletrim.Start(trimQuiet, trimMin)
	defer trim.Stop()
	// A key derivation allocates its memory at once and then works
	// without allocating: the trimmer may look during it, find it live,
	// and see no collection after it.
	g.vault.derived = func() { go trim.Trim() }

	g.vault.start()
	if err := g.openAudit(g.stateDir); err != nil {
		return err
	}
	defer g.closeAudit()
	if err := g.recordStart(g.stateDir); err != nil {
		return fmt.Errorf("the audit log cannot be written, so the gateway does not start: %w", err)
	}
	g.srv = newServers(ctx)
	defer g.closeListeners()
	if err := g.serveSockets(); err != nil {
		g.srv.stop()
		return err
	}
	g.restoreRuns()
	g.sweepRunSockets()
	g.proposePending()
	if err := g.startBastion(); err != nil {
		g.srv.stop()
		return err
	}
	g.serveControl()
	stopWatch := g.watch(g.srv.ctx)
	defer stopWatch()

	// What starting left (the configuration, the vault, the audit log's
	// verification) goes back now, and the collector's own first
	// collection is made while nothing waits for the gateway.
	trim.Trim()
	state, epoch := g.vault.State()
	g.log.Info("gateway started", "boot_id", g.bootID, "socket", g.opts.Socket, "vault", state, "epoch", epoch, "pid", os.Getpid())
	if g.opts.Ready != nil {
		g.opts.Ready()
	}
	g.signals.Run(g.srv.ctx)
	return g.shutdown()
}

// The gateway gives back the memory a burst of work left (package
// idletrim) once it has allocated nothing for trimQuiet, when trimMin
// bytes or more can be given back.
const (
	trimQuiet = 100 * time.Millisecond
	trimMin   = 512 << 10
)

// HeldSignals are the signals the gateway acts on that the program that
// runs it holds (heldsig.Hold, first thing): SIGUSR1, after which a
// client may send a request at once, and must find every key gone.
// SIGHUP, which reloads the configuration, is caught through os/signal
// instead: postern agent COMMAND hands it on to COMMAND as well.
var HeldSignals = []syscall.Signal{syscall.SIGUSR1}

// onSignal reloads the configuration on SIGHUP, and wipes every key and
// revokes every grant on SIGUSR1.
func (g *Gateway) onSignal(s os.Signal) {
	if s != syscall.SIGUSR1 {
		g.reloadConfig()
		return
	}
	// As OpenSSH 10's ssh-agent: every key goes. Added keys are wiped,
	// an unlocked vault is locked, every grant ends, and every card of a
	// request is withdrawn (a lock withdraws them too; without a vault,
	// an answer given later would grant a key the person had just wiped).
	g.recordKeysGone(g.keys.Wipe(), audit.ReasonRevoked)
	g.vault.lockIfOpen()
	n := g.engine.RevokeAll()
	g.engine.WithdrawRequests()
	g.log.Info("all keys wiped and grants revoked", "signal", "SIGUSR1", "grants", n)
}

// recordKeysGone records the agent's keys that went without a client
// asking (their lifetime ended, SIGUSR1), why.
func (g *Gateway) recordKeysGone(ids []*sshagent.Identity, why audit.Reason) {
	for _, id := range ids {
		g.log.Info("key removed", "key", id.Fingerprint(), "reason", why)
		g.engine.Record(sshagent.KeyEvent(audit.EventAgentKeyRemoved, id, why))
	}
}

// shutdown wipes the keys at once, ends every grant and card, stops
// serving, and gives the bastion's running commands a bounded grace period
// ([bastion] stop_grace) before it cuts them off (their outcome is then
// unknown), so that neither the keys nor the state files outlive the
// decision to stop by more than that. It returns the error that stopped a
// socket, if one did.
func (g *Gateway) shutdown() error {
	g.vault.wipe()
	g.recordKeysGone(g.keys.Wipe(), audit.ReasonGatewayStopped)
	g.log.Info("stopping: keys wiped")
	g.engine.Stop()
	g.srv.cancel()
	g.closeListeners()
	g.srv.wg.Wait()
	// Nothing that answers a control request outlives the gateway (a
	// follower of the cards, an unlock in progress): their connections
	// are cut, and they are waited for, for a bounded time.
	if !waitAtMost(stopWait, g.ctl.Wait) {
		g.log.Warn("stopping: control requests still being answered; not waiting for them")
	}
	g.mu.Lock()
	grace := g.config.Bastion.StopGrace.Duration
	g.mu.Unlock()
	g.stopBastion(grace)
	g.closeJournal()
	g.notes.svc.Close()
	if err := g.vault.epoch.Flush(); err != nil {
		g.log.Warn("the vault epoch could not be written to its file: the next gateway may count it again", "err", err)
	}
	g.log.Info("gateway stopped", "boot_id", g.bootID)
	return g.srv.err()
}

func itoa(n int) string { return strconv.Itoa(n) }
