// Package gateway assembles the postern daemon: the agent socket served
// by sshagent, the control socket the command line talks to, the vault
// and its lock state, the approval engine and the configuration it is
// built from. It is the only package that wires these together, and only
// cmd/postern uses it.
//
// The gateway mints a random boot id when it starts. It lives in memory
// only: after a restart nothing that was bound to the old boot id can
// match again.
package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/bastion"
	"github.com/postern/postern/bastion/journal"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/askpass"
	"github.com/postern/postern/internal/config"
	"github.com/postern/postern/internal/control"
	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/safesocket"
	"github.com/postern/postern/internal/xdg"
	"github.com/postern/postern/sshagent"
)

// Options configure a gateway.
type Options struct {
	// Socket is the path of the agent socket. The control socket is
	// created beside it (api.ControlSocket).
	Socket string
	// Lifetime is the default lifetime of keys added with ssh-add.
	Lifetime time.Duration
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
	procs   *procid.Table
	keys    *sshagent.Keyring
	vault   *vaultState
	engine  *approvals.Engine
	agent   *sshagent.Server
	ctl     *control.Server
	ops     map[api.Op]handler

	configPath string
	vaultPath  string
	stateDir   string
	audit      *audit.Log
	journal    *journal.Journal
	bastion    *bastion.Server
	bastionL   *net.UnixListener

	runMu    sync.Mutex
	runLs    map[string]*net.UnixListener // run id -> the run's agent socket
	serveRun func(run *approvals.Run) error

	mu        sync.Mutex
	config    config.File
	configErr error
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
	stateDir, err := xdg.StateDir()
	if err != nil {
		return nil, err
	}
	if err := xdg.EnsureDir(stateDir); err != nil {
		return nil, fmt.Errorf("creating the state directory: %w", err)
	}
	cfgPath, err := xdg.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
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
	g.keys = &sshagent.Keyring{DefaultLifetime: opts.Lifetime}
	g.vault = &vaultState{
		path:  g.vaultPath,
		keys:  g.keys,
		epoch: loadEpoch(filepath.Join(stateDir, xdg.EpochFile)),
		log:   g.log.Info,
	}
	pol, err := approvals.Compile(cfg)
	if err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	g.engine = approvals.NewEngine(approvals.Config{
		Procs:       g.procs,
		Log:         g.log,
		BootID:      g.bootID,
		Vault:       g.vault.lockedEpoch,
		Policy:      pol,
		Askpass:     opts.Env,
		ContextFile: filepath.Join(stateDir, xdg.ContextFile),
		OnRunEnd:    g.closeRun,
	})
	g.vault.onChange = append(g.vault.onChange, func(_, epoch uint64, why audit.Reason) {
		g.engine.EpochChanged(g.vault.locked)
		g.recordVault(epoch, why, g.vault.locked)
	})
	g.agent = &sshagent.Server{
		Keys:    g.keys,
		Decider: g.engine,
		Locker:  g.vault,
		Procs:   g.procs,
		Log:     g.log,
	}
	g.ops = g.handlers()
	g.ctl = &control.Server{Procs: g.procs, Log: g.log, Handle: g.answerControl}
	return g, nil
}

// BootID returns the gateway's boot id.
func (g *Gateway) BootID() string { return g.bootID }

// Run serves until ctx is done. SIGHUP reloads the configuration.
func (g *Gateway) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	g.vault.start()
	if err := g.openAudit(g.stateDir); err != nil {
		return err
	}
	defer g.closeAudit()
	if err := g.recordStart(g.stateDir); err != nil {
		return fmt.Errorf("the audit log cannot be written, so the gateway does not start: %w", err)
	}
	agentL, err := safesocket.Listen(g.opts.Socket)
	if err != nil {
		return fmt.Errorf("agent socket: %w", err)
	}
	defer agentL.Close()
	if err := procid.PassCredentials(agentL); err != nil {
		return fmt.Errorf("agent socket: %w", err)
	}
	if err := safesocket.CheckDir(filepath.Dir(g.opts.Socket)); err != nil {
		g.log.Warn(err.Error())
	}
	ctlL, err := safesocket.Listen(api.ControlSocket(g.opts.Socket))
	if err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	defer ctlL.Close()

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGUSR1)
	defer signal.Stop(sigs)

	var wg sync.WaitGroup
	errc := make(chan error, 2)
	serve := func(f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil {
				errc <- err
				cancel()
			}
		}()
	}
	serve(func() error {
		return g.agent.Serve(ctx, agentL, &sshagent.Endpoint{Channel: approvals.Channel{Kind: approvals.ChannelAgent}})
	})
	serve(func() error { return g.ctl.Serve(ctx, ctlL) })
	g.serveRun = func(run *approvals.Run) error {
		l, err := safesocket.Listen(run.Socket)
		if err != nil {
			return err
		}
		if err := procid.PassCredentials(l); err != nil {
			l.Close()
			return err
		}
		g.runMu.Lock()
		g.runLs[run.ID] = l
		g.runMu.Unlock()
		ep := &sshagent.Endpoint{Channel: approvals.Channel{Kind: approvals.ChannelRun, Run: run.ID}, Admit: g.engine.AdmitRun(run.ID)}
		serve(func() error { return g.agent.Serve(ctx, l, ep) })
		return nil
	}
	for _, run := range g.engine.Restore() {
		if err := g.serveRun(run); err != nil {
			g.log.Warn("cannot serve a restored run's socket", "run", run.ID, "err", err)
			g.engine.EndRun(run.ID, audit.ReasonGatewayRestarted)
			continue
		}
		g.log.Info("run from before the restart still alive; it must be approved again", "run", run.ID, "pid", run.Process.PID, "previous_boot", run.PrevBoot)
	}
	if err := g.startBastion(ctx, serve); err != nil {
		cancel()
		wg.Wait()
		return err
	}
	stopWatch := g.watch(ctx)
	defer stopWatch()

	state, epoch := g.vault.State()
	g.log.Info("gateway started", "boot_id", g.bootID, "socket", g.opts.Socket, "vault", state, "epoch", epoch, "pid", os.Getpid())
	if g.opts.Ready != nil {
		g.opts.Ready()
	}

loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case s := <-sigs:
			if s == syscall.SIGUSR1 {
				n := g.engine.RevokeAll()
				g.log.Info("all grants revoked", "signal", "SIGUSR1", "grants", n)
				continue
			}
			g.reloadConfig()
		}
	}
	g.engine.Stop()
	cancel()
	agentL.Close()
	ctlL.Close()
	g.runMu.Lock()
	for _, l := range g.runLs {
		l.Close()
	}
	g.runMu.Unlock()
	if g.bastionL != nil {
		g.bastionL.Close()
	}
	wg.Wait()
	if g.journal != nil {
		g.journal.Close()
	}
	g.vault.wipe()
	g.log.Info("gateway stopped", "boot_id", g.bootID)
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

// reloadConfig reads the configuration again. An invalid file keeps the
// policy in force; the error is logged and shown by status.
func (g *Gateway) reloadConfig() {
	cfg, err := config.Load(g.configPath)
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil {
		g.configErr = err
		g.log.Error("configuration not reloaded; the previous policy stays in force", "err", err)
		return
	}
	pol, err := approvals.Compile(cfg)
	if err != nil {
		g.configErr = err
		g.log.Error("configuration not reloaded; the previous policy stays in force", "err", err)
		return
	}
	g.config, g.configErr = cfg, nil
	g.engine.SetPolicy(pol)
	g.engine.Record(audit.Event{Type: audit.EventPolicyReloaded, Detail: map[string]string{"path": g.configPath, "approval": cfg.Approval, "rules": itoa(len(cfg.Rules))}})
	g.log.Info("configuration reloaded", "path", g.configPath, "approval", cfg.Approval)
}

// closeRun stops serving an ended run's socket.
func (g *Gateway) closeRun(run *approvals.Run) {
	g.runMu.Lock()
	l := g.runLs[run.ID]
	delete(g.runLs, run.ID)
	g.runMu.Unlock()
	if l != nil {
		l.Close()
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
