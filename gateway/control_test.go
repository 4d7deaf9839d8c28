package gateway

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/bastion"
	"github.com/postern/postern/bastion/journal"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/control"
	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/vault"
)

// startGateway runs a gateway with its state, configuration and sockets
// in a temporary directory, until the test ends.
func startGateway(t testing.TB) (*Gateway, string) {
	t.Helper()
	return startGatewayWith(t, nil)
}

// startGatewayWith is startGateway with prepare run on the temporary
// directory (with the XDG variables set) before the gateway starts.
func startGatewayWith(t testing.TB, prepare func(dir string)) (*Gateway, string) {
	t.Helper()
	dir := gatewayHome(t)
	if prepare != nil {
		prepare(dir)
	}
	g, sock, _ := runGateway(t, dir)
	return g, sock
}

// runGateway starts a gateway in dir, a directory gatewayHome made;
// stop ends it (the test's end does too), and a new one may start in the
// same directory.
func runGateway(t testing.TB, dir string) (g *Gateway, sock string, stop func()) {
	t.Helper()
	return runGatewayWith(t, dir, Options{})
}

// runGatewayWith is runGateway with opts, its Ready set, and its socket
// unless opts names one.
func runGatewayWith(t testing.TB, dir string, opts Options) (g *Gateway, sock string, stop func()) {
	t.Helper()
	sock = cmp.Or(opts.Socket, filepath.Join(dir, "xdg_runtime_dir", "agent.sock"))
	ready := make(chan struct{})
	opts.Socket, opts.Ready = sock, func() { close(ready) }
	g, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("the gateway did not start: %v", err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("gateway: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return g, sock, stop
}

// gatewayHome returns a temporary directory with HOME and the XDG
// directories in it, set for the test.
func gatewayHome(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for _, v := range []string{"HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR"} {
		d := filepath.Join(dir, strings.ToLower(v))
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		t.Setenv(v, d)
	}
	t.Setenv("POSTERN_CONFIG", "")
	return dir
}

// initTestVault creates a vault with passphrase pass where gatewayHome
// put the state directory (at the floor's key derivation, for speed),
// and returns its path.
func initTestVault(t testing.TB, pass []byte) string {
	t.Helper()
	nv, err := api.InitVault(vault.FloorParams(), func() ([]byte, error) { return bytes.Clone(pass), nil })
	if err != nil {
		t.Fatal(err)
	}
	return nv.Path
}

// unlockGateway unlocks the gateway at sock with pass.
func unlockGateway(t testing.TB, sock string, pass []byte) {
	t.Helper()
	if err := api.NewClient(sock).Unlock(context.Background(), api.UnlockArgs{Passphrase: bytes.Clone(pass)}); err != nil {
		t.Fatal(err)
	}
}

// Every operation answers through the typed client, and errors arrive
// with the code the command line picks its exit status by.
func TestControlOperations(t *testing.T) {
	g, sock := startGateway(t)
	c := api.NewClient(api.RunSocket(sock, "R00ff00ff")) // a run's socket leads to the same gateway
	ctx := context.Background()

	st, err := c.Status(ctx)
	if err != nil || st.BootID != g.BootID() || st.Vault.State != api.VaultNone || st.Socket != sock {
		t.Fatalf("status: %+v %v", st, err)
	}
	wantCode := func(what string, err error, code api.Code) {
		t.Helper()
		if !api.HasCode(err, code) {
			t.Errorf("%s: got %v (%#v), want code %q", what, err, err, code)
		}
	}
	wantCode("unlock while unlocked", c.Unlock(ctx, api.UnlockArgs{Passphrase: []byte("x")}), api.CodeUsage)
	wantCode("unlock with a malformed data key", c.Unlock(ctx, api.UnlockArgs{DataKey: []byte("junk")}), api.CodeUsage)
	if res, err := c.Lock(ctx); err != nil || res.Already {
		t.Fatalf("lock: %+v %v", res, err)
	}
	if res, err := c.Lock(ctx); err != nil || !res.Already {
		t.Fatalf("second lock: %+v %v", res, err)
	}
	if st, _ := c.Status(ctx); st.Vault.State != api.VaultLocked {
		t.Fatalf("locked gateway reports %q", st.Vault.State)
	}
	if err := c.Unlock(ctx, api.UnlockArgs{Passphrase: []byte("x")}); err != nil {
		t.Fatalf("unlock: %v", err)
	}
	_, err = c.Answer(ctx, "C00000000", api.VerdictOnce, -1)
	wantCode("answer to a missing card", err, api.CodeNotFound)
	if err == nil || !strings.Contains(err.Error(), "card C00000000") {
		t.Errorf("answer to a missing card: %v", err)
	}
	_, err = c.Answer(ctx, "C00000000", 0, -1)
	wantCode("answer with an unknown verdict", err, api.CodeUsage)
	_, err = c.Revoke(ctx, "G00000000")
	wantCode("revoke of a missing grant", err, api.CodeNotFound)
	if n, err := c.RevokeAll(ctx); err != nil || n != 0 {
		t.Errorf("revoke all: %d %v", n, err)
	}
	_, err = c.JournalPage(ctx, api.JournalArgs{Limit: 10})
	wantCode("journal without a bastion", err, api.CodeNoBastion)
	if res, err := c.Sessions(ctx); err != nil || len(res.Runs) != 0 || len(res.Grants) != 0 {
		t.Errorf("sessions: %+v %v", res, err)
	}
	if res, err := c.Cards(ctx); err != nil || len(res.Cards) != 0 {
		t.Errorf("cards: %+v %v", res, err)
	}
	prep, err := c.PrepareRun(ctx, "label")
	if err != nil || prep.Socket != api.RunSocket(sock, prep.ID) {
		t.Fatalf("prepare run: %+v %v", prep, err)
	}
	if _, err := os.Stat(prep.Socket); err != nil {
		t.Errorf("the run's socket: %v", err)
	}

	// Requests the client never makes.
	raw := func(line string) api.Response {
		t.Helper()
		out, err := control.Exchange(ctx, c.Socket, []byte(line))
		if err != nil {
			t.Fatal(err)
		}
		var r api.Response
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("%q: %v", out, err)
		}
		return r
	}
	if r := raw(`{"op":"nope"}`); r.Code != api.CodeUsage || !strings.Contains(r.Error, `unknown operation "nope"`) {
		t.Errorf("unknown operation: %+v", r)
	}
	if r := raw(`not json`); r.Code != api.CodeUsage {
		t.Errorf("malformed request: %+v", r)
	}
	if r := raw(`{"op":"revoke","args":{}}`); r.Code != api.CodeUsage {
		t.Errorf("revoke without a target: %+v", r)
	}
	if r := raw(`{"op":"answer","args":[1]}`); r.Code != api.CodeUsage || !strings.HasPrefix(r.Error, "malformed request: ") {
		t.Errorf("malformed arguments: %+v", r)
	}
	// A file the gateway does not keep: the command line reads it itself.
	if r := raw(`{"op":"vault.list","args":{"path":"/elsewhere/vault"}}`); r.Code != api.CodeNotFound || !strings.HasPrefix(r.Error, "this gateway keeps another vault (") {
		t.Errorf("another vault: %+v", r)
	}
	if r := raw(`{"op":"audit.read","args":{"log":"/elsewhere/audit.log"}}`); r.Code != api.CodeNotFound || r.Error != "this gateway keeps no audit log (it has no vault)" {
		t.Errorf("an audit log from a gateway with none: %+v", r)
	}
}

// wireCode gives each error the gateway returns its code; wrapping keeps
// it.
func TestWireCode(t *testing.T) {
	for err, want := range map[error]api.Code{
		errMalformed:                   api.CodeUsage,
		errUnknownOp:                   api.CodeUsage,
		badRequest(errors.New("bad")):  api.CodeUsage,
		errNotLocked:                   api.CodeUsage,
		approvals.ErrNotOffered:        api.CodeUsage,
		errPeerChanged:                 api.CodeDenied,
		approvals.ErrSelfApprove:       api.CodeDenied,
		approvals.ErrSameSession:       api.CodeDenied,
		errAlreadyLocked:               api.CodeLocked,
		errNoVault:                     api.CodeNotFound,
		notKept(errors.New("another")): api.CodeNotFound,
		errVaultGone:                   api.CodeVaultGone,
		errNoBastion:                   api.CodeNoBastion,
		approvals.ErrNoCard:            api.CodeNotFound,
		journal.ErrNotFound:            api.CodeNotFound,
		approvals.ErrNoGrant:           api.CodeNotFound,
		vault.ErrKeyNotFound:           api.CodeNotFound,
		bastion.ErrDenied:              api.CodeDenied,
		bastion.ErrNoKeys:              api.CodeNoKeys,
		bastion.ErrNoMarkers:           api.CodeNoMarkers,
		vault.ErrWrongPassphrase:       api.CodeWrongPassphrase,
		errStaleKey:                    api.CodeStaleKey,
		audit.ErrVerify:                api.CodeAuditFailed,
		procid.ErrNoResources:          api.CodeNoResources,
		errors.New("disk full"):        "",
	} {
		if got := wireCode(fmt.Errorf("context: %w", err)); got != want {
			t.Errorf("wireCode(%v) = %q, want %q", err, got, want)
		}
	}
}
