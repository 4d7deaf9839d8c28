package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/procid/proctest"
)

// What a gateway reports of itself holds words of others: the name a
// desktop notification service gives itself (any program on the session
// bus can be that service where none runs) and the error of a
// configuration file a program of the user's wrote. postern doctor shows
// them escaped, as postern status does, and so do the lines of postern
// agent --ensure that say where cards appear, whatever shell reads them.
func TestDoctorShowsOthersWordsEscaped(t *testing.T) {
	st := &api.Status{Approvers: []api.Approver{
		{Name: "console", Detail: "none attached"},
		{Name: "notification", Reachable: true, Detail: hostile + " (pid 7), with Approve once and Deny"},
	}}
	st.Config.Path = "/home/u/.config/postern/config.toml"
	st.Config.Error = "line 3: unknown setting " + hostile
	var b bytes.Buffer
	fs := statusFindings(st)
	printFindings(&b, fs)
	noRaw(t, "doctor", b.String())
	lines := len(fs)
	for _, f := range fs {
		if f.Fix != "" {
			lines++
		}
	}
	if n := strings.Count(b.String(), "\n"); n != lines {
		t.Fatalf("doctor printed %d lines for %d findings and their fixes:\n%s", n, len(fs), b.String())
	}
	var e bytes.Buffer
	for _, line := range whereCards(st.Approvers) {
		echo(&e, line)
	}
	// The lines are read by the person's shell, whose echo may read
	// backslashes (dash's, zsh's).
	for _, sh := range []string{"sh", "bash", "zsh"} {
		out, err := exec.Command(sh, "-c", e.String()).Output()
		if err != nil {
			t.Fatalf("%s reading the lines of agent --ensure: %v\n%s", sh, err, e.String())
		}
		noRaw(t, "agent --ensure, read by "+sh, string(out))
	}
}

// doctor does not call a part in order when the gateway reports it
// broken: an audit log it cannot write (every action is refused), an
// askpass program found changed (askpass approvals are off: a program
// may have rewritten it), a host inventory it cannot read (no host has a
// name), a bastion that refuses every command, an epoch file it cannot
// read or write, an export to syslog that fails or drops, a configuration
// or an inventory found rewritten and put back at an unlock.
func TestDoctorReportsWhatTheGatewaySaysIsBroken(t *testing.T) {
	ok := func() *api.Status {
		st := &api.Status{Approvers: []api.Approver{{Name: "console", Reachable: true, Detail: "1 attached"}}}
		st.Vault.State = api.VaultUnlocked
		st.Audit = api.AuditStatus{Enabled: true, Path: "/s/audit.log", Records: 10}
		st.Askpass = api.AskpassStatus{Path: "/usr/bin/ssh-askpass", SHA256: "ab"}
		st.Hosts = api.HostsStatus{Path: "/s/hosts.json", Count: 2}
		st.Bastion = &api.BastionStatus{Journal: "/s/journal.db"}
		return st
	}
	check := func(fs []finding, name string) finding {
		for _, f := range fs {
			if f.Check == name {
				return f
			}
		}
		return finding{}
	}
	for _, f := range statusFindings(ok()) {
		if f.Status != "ok" {
			t.Fatalf("a gateway with nothing broken: %+v", f)
		}
	}
	for _, tt := range []struct {
		name   string
		break_ func(*api.Status)
		check  string
		status string
		want   string
	}{
		{"audit failing", func(st *api.Status) {
			st.Audit.Failing, st.Audit.FailingSince, st.Audit.Refused = "no space left on device", "2026-12-04T19:00:00Z", 3
		}, "audit", "fail", "no space left on device"},
		{"askpass changed", func(st *api.Status) {
			st.Askpass.Error = "the askpass program changed since the gateway started; askpass approvals are off until it restarts (/usr/bin/ssh-askpass)"
		}, "askpass", "warn", "changed"},
		{"hosts unreadable", func(st *api.Status) { st.Hosts.Error = "hosts.json: unexpected end of JSON input" }, "hosts", "warn", "unexpected end"},
		{"bastion refusing", func(st *api.Status) {
			st.Bastion.Refusing, st.Bastion.Since = "the journal is damaged", "2026-12-04T19:00:00Z"
		}, "bastion", "fail", "journal is damaged"},
		{"epoch file unreadable", func(st *api.Status) {
			st.Vault.EpochError = "/s/epoch: unexpected end of file"
		}, "vault", "warn", "/s/epoch: unexpected end of file"},
		{"syslog unreachable", func(st *api.Status) {
			st.Audit.Syslog = &api.SyslogStatus{Address: "udp://log:514", Error: "connection refused"}
		}, "audit", "warn", "connection refused"},
		{"syslog dropping", func(st *api.Status) {
			st.Audit.Syslog = &api.SyslogStatus{Address: "udp://log:514", Sent: 5, Dropped: 7}
		}, "audit", "warn", "7 dropped"},
		{"configuration put back", func(st *api.Status) {
			st.Config.Restored = "the approved configuration in the state directory was not the one sealed in the vault; the vault's was put back at 2026-12-04T19:00:00Z"
		}, "config", "warn", "was not the one sealed"},
		{"policy change waiting", func(st *api.Status) {
			st.Config.Pending = []string{"approval: per-call → none"}
		}, "config", "warn", "approval: per-call → none"},
		{"a dynamic loader started it", func(st *api.Status) {
			st.Interpreter = "/lib64/ld-linux-x86-64.so.2"
		}, "gateway", "warn", "linked dynamically (started by /lib64/ld-linux-x86-64.so.2)"},
		{"inventory put back", func(st *api.Status) {
			st.Hosts.Restored = "the host inventory file was not the one sealed in the vault; the vault's was put back at 2026-12-04T19:00:00Z, the file found kept at /s/hosts.json.rewritten"
		}, "hosts", "warn", "hosts.json.rewritten"},
	} {
		st := ok()
		tt.break_(st)
		f := check(statusFindings(st), tt.check)
		if f.Status != tt.status || !strings.Contains(f.Detail, tt.want) {
			t.Errorf("%s: %s finding %+v, want %s naming %q", tt.name, tt.check, f, tt.status, tt.want)
		}
	}
}

// A vault file or state directory that other users can read is told of,
// as ssh tells of a private key readable by others: the vault is
// encrypted, but its passphrase is then all that stands between them and
// its keys, tried offline at their leisure.
func TestDoctorWarnsOfAVaultOpenToOthers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "postern")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "vault")
	if err := os.WriteFile(path, []byte("sealed"), 0o600); err != nil {
		t.Fatal(err)
	}
	st := &api.Status{Approvers: []api.Approver{{Name: "console", Reachable: true, Detail: "1 attached"}}}
	st.Vault = api.VaultStatus{State: api.VaultUnlocked, Path: path}
	vaultFinding := func() finding {
		for _, f := range statusFindings(st) {
			if f.Check == "vault" {
				return f
			}
		}
		t.Fatal("no vault finding")
		return finding{}
	}
	if f := vaultFinding(); f.Status != "ok" {
		t.Fatalf("a vault file of mode 0600 in a directory of mode 0700: %+v", f)
	}
	for _, tt := range []struct {
		path string
		mode os.FileMode
		fix  string
	}{{path, 0o644, "chmod 600 " + path}, {dir, 0o755, "chmod 700 " + dir}} {
		if err := os.Chmod(tt.path, tt.mode); err != nil {
			t.Fatal(err)
		}
		f := vaultFinding()
		if f.Status != "warn" || !strings.Contains(f.Detail, fmt.Sprintf("%s is open to other users (mode %04o)", tt.path, tt.mode)) || !strings.Contains(f.Fix, tt.fix) {
			t.Errorf("%s of mode %04o: vault finding %+v, want a warning naming it and %q", tt.path, tt.mode, f, tt.fix)
		}
	}
}

// An upstream socket where the gateway itself listens is one the gateway
// does not ask: postern doctor says so rather than list its keys.
func TestDoctorSaysTheUpstreamLeadsBackToTheGateway(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	st := &api.Status{PID: os.Getpid(), Upstream: &api.UpstreamStatus{Socket: sock}}
	if f := upstreamCheck(st); f.Status != "fail" || !strings.Contains(f.Detail, "leads back to the gateway itself") {
		t.Errorf("an upstream socket the gateway listens on: %+v", f)
	}
}

// An upstream socket where an agent of another user listens is one the
// gateway does not ask: postern doctor says so, and lists nothing of it.
// OpenSSH's ssh-agent runs as user nobody.
func TestDoctorSaysTheUpstreamIsAnotherUsers(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("this test runs an agent as user nobody: it needs root")
	}
	top, err := os.MkdirTemp("", "doctor-up-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(top)
	dir := filepath.Join(top, "agent")
	for _, err := range []error{os.Chmod(top, 0o755), os.Mkdir(dir, 0o700), os.Chown(dir, 65534, 65534)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	sock := filepath.Join(dir, "agent.sock")
	cmd := exec.Command("ssh-agent", "-D", "-a", sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	proctest.WaitAccepting(t, sock)
	st := &api.Status{PID: os.Getpid(), Upstream: &api.UpstreamStatus{Socket: sock}}
	if f := upstreamCheck(st); f.Status != "fail" || !strings.Contains(f.Detail, "an agent of another user (uid 65534") {
		t.Errorf("an upstream socket where user nobody's agent listens: %+v", f)
	}
}

// status and doctor take the gateway's word for the defaults: a file
// removed a moment ago, whose policy the gateway still has in force, is
// not "the defaults" before the gateway has noticed the removal.
func TestOnDefaultsTakesTheGatewaysWord(t *testing.T) {
	gone := filepath.Join(t.TempDir(), "config.toml")
	if onDefaults(api.ConfigStatus{Path: gone, Approval: "per-call"}) {
		t.Fatal("a missing file is taken for the defaults though the gateway does not say it runs on them")
	}
	if !onDefaults(api.ConfigStatus{Path: gone, Approval: "session", Defaults: true}) {
		t.Fatal("a gateway on the defaults, with no file, is not said to be")
	}
}

// With no approver reachable, doctor says why each one is not, as the
// gateway found it in the environment it started with, where it named
// none: a person whose shell has $SSH_ASKPASS and $DISPLAY set was told
// that askpass needs them, of a gateway started without them.
func TestDoctorSaysWhyNoApproverIsReachable(t *testing.T) {
	st := &api.Status{Approvers: []api.Approver{
		{Name: "console", Detail: `none attached ("postern approve" in another terminal)`},
		{Name: "askpass", Detail: "no askpass program available: no display ($DISPLAY and $WAYLAND_DISPLAY are unset; SSH_ASKPASS_REQUIRE=force asks without one)"},
		{Name: "notification", Detail: "no D-Bus session bus ($DBUS_SESSION_BUS_ADDRESS is unset and $XDG_RUNTIME_DIR/bus does not exist)"},
	}}
	var f finding
	for _, g := range statusFindings(st) {
		if g.Check == "approvers" {
			f = g
		}
	}
	if f.Status != "warn" {
		t.Fatalf("no approver reachable: %+v, want warn", f)
	}
	for _, want := range []string{"askpass: no askpass program available: no display", "notification: no D-Bus session bus"} {
		if !strings.Contains(f.Detail, want) {
			t.Errorf("doctor says %q, which does not say %q", f.Detail, want)
		}
	}
	if !strings.Contains(f.Fix, "started") {
		t.Errorf("the fix %q does not say that the gateway reads its environment when it is started", f.Fix)
	}
}

// An askpass program a program of the user's can replace (the file or a
// directory above it is the user's) is warned of: the gateway pins what
// it finds at its start, so such a program's own would answer cards
// after the next one. One the user cannot write is not.
func TestDoctorWarnsOfAnAskpassTheUserCanReplace(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "my-askpass")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	uid := os.Geteuid()
	if uid == 0 {
		// Root's files are all its own: the check is of another user,
		// whose directory this is.
		uid = 65534
		if err := os.Chown(dir, uid, -1); err != nil {
			t.Fatal(err)
		}
	}
	defer func(f func() int) { effectiveUID = f }(effectiveUID)
	effectiveUID = func() int { return uid }
	askpass := func(path string) finding {
		var f finding
		for _, g := range statusFindings(&api.Status{Askpass: api.AskpassStatus{Path: path}}) {
			if g.Check == "askpass" {
				f = g
			}
		}
		return f
	}
	if f := askpass(prog); f.Status != "warn" || !strings.Contains(f.Detail, dir+" is yours") {
		t.Errorf("an askpass program in a directory of the user's: %+v", f)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	if f := askpass(sh); f.Status != "" {
		t.Errorf("an askpass program of root's (%s): %+v", sh, f)
	}
	// A link of the user's to root's program is the user's to replace.
	link := filepath.Join(dir, "link-askpass")
	if err := os.Symlink(sh, link); err != nil {
		t.Fatal(err)
	}
	if f := askpass(link); f.Status != "warn" || !strings.Contains(f.Detail, dir+" is yours") {
		t.Errorf("a link in a directory of the user's to root's program: %+v", f)
	}
}

// An ssh first on PATH that never exits is reported, and doctor goes on,
// where it waited for it for ever.
func TestDoctorDoesNotWaitForAnSSHThatHangs(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "ssh"), []byte("#!/bin/sh\nexec sleep 1000\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	defer func(d time.Duration) { doctorCommandTimeout = d }(doctorCommandTimeout)
	doctorCommandTimeout = 200 * time.Millisecond
	done := make(chan finding, 1)
	go func() { done <- opensshCheck() }()
	select {
	case f := <-done:
		if f.Status != "warn" || !strings.Contains(f.Detail, `"ssh -V" did not finish`) {
			t.Fatalf("an ssh that hangs: %+v", f)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("doctor still waits for an ssh that never exits")
	}
}
