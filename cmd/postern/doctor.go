package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/config"
	"github.com/postern/postern/internal/safetext"
	"github.com/postern/postern/internal/xdg"
)

const doctorUsage = `Usage: postern doctor [--json] [--socket PATH]

Check the set-up and say what to fix: the agent socket and
$SSH_AUTH_SOCK, which approvers can show cards, the vault, the audit log,
the configuration, the upstream agent, confinement support, OpenSSH, and
the systemd unit.
Exit status 1 when a check failed.
`

// finding is one check's result.
type finding struct {
	Check  string `json:"check"`
	Status string `json:"status"` // ok, warn, fail or info
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

func cmdDoctor(args []string, out, errw io.Writer) error {
	fs := newFlags("doctor", doctorUsage)
	asJSON := fs.Bool("json", false, "print JSON")
	sock := socketFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := noOperands(fs)(); err != nil {
		return err
	}
	fs2 := doctor(*sock)
	failed := false
	for _, f := range fs2 {
		failed = failed || f.Status == "fail"
	}
	if *asJSON {
		if err := printJSON(out, fs2); err != nil {
			return err
		}
	} else {
		printFindings(out, fs2)
	}
	if failed {
		return &exitError{exitFailure}
	}
	return nil
}

// findingRank orders a finding's statuses, the worst last.
var findingRank = map[string]int{"ok": 0, "info": 1, "warn": 2, "fail": 3}

// printFindings writes the findings, a line each and a line for each fix.
// A detail can hold words of others (the name a notification service
// gives itself, a configuration file's error): it is rendered whole
// (safetext.Terminal).
func printFindings(out io.Writer, fs []finding) {
	for _, f := range fs {
		fmt.Fprintf(out, "%-5s %-12s %s\n", f.Status, f.Check, safetext.Terminal(f.Detail))
		if f.Fix != "" {
			fmt.Fprintf(out, "%-5s %-12s fix: %s\n", "", "", safetext.Terminal(f.Fix))
		}
	}
}

const ensureFix = `eval "$(postern agent --ensure)" (or "systemctl --user enable --now postern")`

// doctor runs every check.
func doctor(sockFlag string) []finding {
	var fs []finding
	add := func(check, status, detail, fix string) {
		fs = append(fs, finding{Check: check, Status: status, Detail: detail, Fix: fix})
	}
	env := os.Getenv("SSH_AUTH_SOCK")
	sock := sockFlag
	if sock == "" {
		s, note, err := api.Locate(env)
		switch {
		case errors.As(err, new(*api.RunSocketError)):
			add("socket", "fail", err.Error(), hintFor("doctor", err))
		case err != nil:
			add("socket", "fail", err.Error(), ensureFix)
		case note != "":
			add("socket", "fail", note+": ssh and git use $SSH_AUTH_SOCK, not postern", `set SSH_AUTH_SOCK=`+s+` (eval "$(postern agent --ensure)" prints it)`)
		case env == "":
			add("socket", "fail", "$SSH_AUTH_SOCK is not set: ssh and git do not use postern (a gateway listens at "+s+")", ensureFix)
		case !api.Listens(s):
			// Locate passes on a path where nothing is, and takes
			// the sockets a gateway that was killed left behind.
			add("socket", "fail", "$SSH_AUTH_SOCK is "+env+", where nothing listens (a gateway that stopped)", ensureFix)
		default:
			add("socket", "ok", "$SSH_AUTH_SOCK is "+env+", served by postern", "")
		}
		sock = s
	}
	var st *api.Status
	if sock != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		if st, err = api.NewClient(sock).Status(ctx); err != nil {
			add("gateway", "fail", err.Error(), ensureFix)
			st = nil
		}
	}
	if st != nil {
		fs = append(fs, statusFindings(st)...)
	} else {
		fs = append(fs, configCheck())
	}
	fs = append(fs, confinement())
	fs = append(fs, opensshCheck())
	fs = append(fs, systemdCheck())
	return fs
}

// statusFindings are the checks of what a gateway reports of itself.
func statusFindings(st *api.Status) []finding {
	var fs []finding
	add := func(check, status, detail, fix string) {
		fs = append(fs, finding{Check: check, Status: status, Detail: detail, Fix: fix})
	}
	// also adds to a check's finding what else is wrong there: its status
	// becomes the worse of both, so that a check is never "ok" beside
	// what is broken in it.
	also := func(check, status, detail, fix string) {
		f := &fs[len(fs)-1]
		if f.Check != check {
			add(check, status, detail, fix)
			return
		}
		if findingRank[status] > findingRank[f.Status] {
			f.Status = status
		}
		f.Detail += "; " + detail
		f.Fix = strings.TrimPrefix(f.Fix+"; "+fix, "; ")
	}
	add("gateway", "ok", fmt.Sprintf("pid %d, started %s", st.PID, st.Started), "")
	if st.Interpreter != "" {
		also("gateway", "warn", fmt.Sprintf("postern is linked dynamically (started by %s): a library LD_PRELOAD names, or one found in a directory of LD_LIBRARY_PATH, where the gateway starts is loaded into the process that holds the keys", safetext.Field(st.Interpreter, safetext.Line)),
			"install postern with make install, which builds one static program (go install builds with cgo where a C compiler is found, unless CGO_ENABLED=0), then restart the gateway")
	}
	reach, unreached := []string{}, []string{}
	for _, a := range st.Approvers {
		if a.Reachable {
			reach = append(reach, approverLine(a))
		} else if a.Detail != "" {
			unreached = append(unreached, a.Name+": "+safetext.Field(a.Detail, safetext.Line))
		}
	}
	if len(reach) == 0 {
		// Why each is not, as the gateway found it: a person's shell
		// may have what the gateway was started without.
		add("approvers", "warn", "none reachable: a request that needs a card is refused at once (no_approver); "+strings.Join(unreached, "; "),
			`run "postern approve" in another terminal; the gateway finds the session bus of desktop notifications, and SSH_ASKPASS and the display of askpass, in the environment it was started with: start it again where they are set (under systemd, after "systemctl --user import-environment")`)
	} else {
		add("approvers", "ok", strings.Join(reach, "; "), "")
	}
	switch v := st.Vault; {
	case v.State == api.VaultLocked && v.NoPassword:
		add("vault", "warn", fmt.Sprintf("locked (epoch %d) %s: nothing is signed", st.Vault.Epoch, noPasswordLock), `postern unlock`)
	case v.State == api.VaultLocked:
		add("vault", "warn", fmt.Sprintf("locked (epoch %d): nothing from the vault is signed", st.Vault.Epoch), `postern unlock`)
	case v.State == api.VaultUnlocked:
		add("vault", "ok", fmt.Sprintf("unlocked (epoch %d), %s usable", st.Vault.Epoch, plural(st.Counts.Keys, "key")), "")
	default:
		add("vault", "info", fmt.Sprintf("none: keys added with ssh-add only (%s)", plural(st.Counts.Keys, "key")), `"postern vault init" keeps keys encrypted and starts the audit log`)
	}
	if e := st.Vault.EpochError; e != "" {
		// An epoch the audit log names twice, or one not kept: the
		// vault's own finding stays as it is.
		also("vault", "warn", "the epoch file: "+e, "see what changed the file; the gateway counts on from above any epoch it held")
	}
	if detail, fix := openToOthers(st.Vault.Path); detail != "" {
		also("vault", "warn", detail, fix)
	}
	if st.Askpass.Error != "" {
		add("askpass", "warn", "askpass approvals are off: "+st.Askpass.Error, "see what changed the program (a program of yours may have rewritten it), then restart the gateway")
	} else if uid := effectiveUID(); st.Askpass.Path != "" && uid != 0 {
		// (Root's files are all its own: nothing to tell.)
		if why := rewritableBy(st.Askpass.Path, uint32(uid)); why != "" {
			add("askpass", "warn", fmt.Sprintf("the askpass program %s answers cards, and a program of yours can put another in its place (%s): the gateway pins whatever is there when it starts",
				safetext.Field(st.Askpass.Path, safetext.Line), safetext.Field(why, safetext.Line)),
				"use an askpass program your user cannot write (as the system's ssh-askpass), or approve on the console alone (SSH_ASKPASS_REQUIRE=never)")
		}
	}
	switch {
	case st.Audit.Enabled && st.Audit.Failing != "":
		add("audit", "fail", fmt.Sprintf("%s cannot be written since %s: %s; every action is refused until it can (%d so far)", st.Audit.Path, st.Audit.FailingSince, st.Audit.Failing, st.Audit.Refused), "make the log writable again (room on its file system); the gateway retries it")
	case st.Audit.Enabled:
		add("audit", "ok", fmt.Sprintf("%s, %s", st.Audit.Path, plural(int(st.Audit.Records), "record")), "")
	case st.Audit.SetUp:
		add("audit", "warn", "set up after this gateway started: nothing is recorded", "restart the gateway")
	default:
		add("audit", "warn", "off: approvals and signatures are not recorded", `postern vault init`)
	}
	if x := st.Audit.Syslog; x != nil && (x.Error != "" || x.Dropped > 0) {
		detail := fmt.Sprintf("export to syslog %s: %d sent, %d dropped", x.Address, x.Sent, x.Dropped)
		if x.Error != "" {
			detail += ": " + x.Error
		}
		also("audit", "warn", detail, "check that the syslog daemon at "+x.Address+" listens and keeps up; the gateway retries it")
	}
	if e := st.Config.Error; e != "" {
		if !strings.Contains(e, st.Config.Path) {
			// Errors of the file name it, most of them already.
			e = st.Config.Path + ": " + e
		}
		add("config", "fail", e+" (the previous policy stays in force)", "fix the file; it is reloaded when saved")
	} else {
		add("config", "ok", configDetail(st.Config.Path, st.Config.Approval, onDefaults(st.Config)), "")
	}
	for _, c := range st.Config.Pending {
		also("config", "warn", "the file loosens the approved policy, waiting for approval (the stricter policy in force): "+c, `"postern approve --list" shows the policy change card: approve it if you made the change, deny it if you did not`)
	}
	if st.Config.Restored != "" {
		also("config", "warn", st.Config.Restored, "see what rewrote the approved configuration in the state directory")
	}
	if st.Hosts.Error != "" {
		add("hosts", "warn", st.Hosts.Path+" not read, so no host has a name and every login is asked about as strictly as any host rule could ask: "+st.Hosts.Error, "fix the file, or remove it and add the hosts again (postern hosts)")
	}
	if st.Hosts.Restored != "" {
		also("hosts", "warn", st.Hosts.Restored, "see what rewrote the host inventory; compare the file kept aside with postern hosts list")
	}
	switch b := st.Bastion; {
	case b == nil:
	case b.Refusing != "":
		// What it refuses for (the journal, the bastion's keys, a
		// configuration the sealed one does not approve) names what to
		// mend.
		fix := "mend what it names, then restart the gateway"
		if b.Damaged {
			fix = `"postern journal new" keeps the damaged journal aside and starts a new one`
		}
		add("bastion", "fail", fmt.Sprintf("refusing every command since %s: %s", b.Since, b.Refusing), fix)
	default:
		add("bastion", "ok", "serving; journal "+b.Journal, "")
	}
	if st.Upstream != nil {
		fs = append(fs, upstreamCheck(st))
	}
	return fs
}

// configCheck reads the configuration file as a gateway starting now
// would, for when none runs to say how it read it: a mistake there stops
// the gateway that the socket check says to start.
func configCheck() finding {
	f := finding{Check: "config"}
	path, err := xdg.ConfigFile()
	if err != nil {
		f.Status, f.Detail = "fail", err.Error()
		return f
	}
	cfg, err := config.Load(path)
	switch {
	case err != nil:
		f.Status, f.Detail, f.Fix = "fail", err.Error()+": a gateway does not start with it", "fix the file (postern.toml(5))"
	default:
		f.Status, f.Detail = "ok", configDetail(path, cfg.Approval, !fileExists(path))
	}
	return f
}

// configDetail says which configuration is in force: the file at path,
// or, with none there, the defaults.
func configDetail(path, approval string, defaults bool) string {
	if defaults {
		return path + " does not exist: the defaults (approval: " + approval + ")"
	}
	return fmt.Sprintf("%s (approval: %s)", path, approval)
}

// onDefaults reports whether a gateway that reports c runs on the
// defaults: it says so (a file removed while it ran leaves that file's
// policy in force, though the file is gone), there is no file, and it
// says nothing went wrong with one nor that it waits for a change to be
// approved.
func onDefaults(c api.ConfigStatus) bool {
	return c.Defaults && c.Error == "" && len(c.Pending) == 0 && c.Restored == "" && !fileExists(c.Path)
}

// openToOthers says whether the vault file at path, or the directory
// that holds it, lets other users in (group or world permission bits),
// as ssh says of a private key: the vault is encrypted, but then its
// passphrase alone keeps them from its keys, offline and untimed. A file
// that is not there says nothing.
func openToOthers(path string) (detail, fix string) {
	if path == "" {
		return "", ""
	}
	var open, fixes []string
	for _, p := range []struct {
		path, what string
		want       os.FileMode
	}{{filepath.Dir(path), "its directory", 0o700}, {path, "the vault file", 0o600}} {
		fi, err := os.Stat(p.path)
		if err != nil || fi.Mode().Perm()&0o077 == 0 {
			continue
		}
		open = append(open, fmt.Sprintf("%s %s is open to other users (mode %04o)", p.what, p.path, fi.Mode().Perm()))
		fixes = append(fixes, fmt.Sprintf("chmod %o %s", p.want, p.path))
	}
	if open == nil {
		return "", ""
	}
	return strings.Join(open, ", and ") + ": only the passphrase keeps them from its keys", strings.Join(fixes, "; ")
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// doctorCommandTimeout bounds each program doctor runs: one that never
// exits (an ssh put first on PATH, a user manager that hangs) is
// reported, not waited for (tests shorten it).
var doctorCommandTimeout = 10 * time.Second

// doctorOutput runs the command name args and returns its output (its
// standard error too when combined), killing it past
// doctorCommandTimeout: the error is then context.DeadlineExceeded.
func doctorOutput(combined bool, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), doctorCommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = time.Second // a child that keeps its output open
	run := cmd.Output
	if combined {
		run = cmd.CombinedOutput
	}
	out, err := run()
	if ctx.Err() != nil {
		return out, context.DeadlineExceeded
	}
	return out, err
}

// opensshCheck checks that ssh sends session-bind@openssh.com (OpenSSH
// 8.9 and later), without which no destination is verified.
func opensshCheck() finding {
	f := finding{Check: "openssh"}
	out, err := doctorOutput(true, "ssh", "-V")
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		f.Status, f.Detail, f.Fix = "warn", fmt.Sprintf(`"ssh -V" did not finish in %s`, doctorCommandTimeout), `see which ssh is first on PATH ("command -v ssh")`
		return f
	case err != nil:
		f.Status, f.Detail = "warn", "ssh not found"
		return f
	}
	v := strings.TrimSpace(string(out))
	m := regexp.MustCompile(`OpenSSH_(\d+)\.(\d+)`).FindStringSubmatch(v)
	if m == nil {
		f.Status, f.Detail = "info", v
		return f
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	if major > 8 || major == 8 && minor >= 9 {
		f.Status, f.Detail = "ok", v+": binds sessions, so cards show verified destinations"
	} else {
		f.Status, f.Detail, f.Fix = "warn", v+": older than 8.9, no session-bind: destinations are UNKNOWN and get the strictest mode", "upgrade OpenSSH"
	}
	return f
}

// systemdCheck reports the systemd user units: the service enabled, or
// the socket alone (the first connection starts the agent).
func systemdCheck() finding {
	f := finding{Check: "systemd"}
	if _, err := exec.LookPath("systemctl"); err != nil {
		f.Status, f.Detail = "info", "no systemctl: start the agent from your shell's start-up file"
		return f
	}
	service, why := unitState("postern.service")
	socket, _ := unitState("postern.socket")
	switch {
	case service == "enabled" || service == "static":
		f.Status, f.Detail = "ok", "postern.service "+service
	case socket == "enabled":
		f.Status, f.Detail = "ok", "postern.socket enabled: the first connection starts the agent"
	case service == "" && strings.Contains(why, "unit file state"):
		f.Status, f.Detail, f.Fix = "info", "postern.service is not installed", `"make install", then "systemctl --user enable --now postern"`
	case service == "":
		f.Status, f.Detail = "info", "the user manager does not answer (no systemd user session)"
	default:
		f.Status, f.Detail, f.Fix = "info", "postern.service "+service, `"systemctl --user enable --now postern" (or postern.socket)`
	}
	return f
}

// unitState returns what "systemctl --user is-enabled" says of unit,
// and, when it says nothing, why.
func unitState(unit string) (state, why string) {
	out, err := doctorOutput(false, "systemctl", "--user", "is-enabled", unit)
	if errors.Is(err, context.DeadlineExceeded) {
		return "", fmt.Sprintf("systemctl did not finish in %s", doctorCommandTimeout)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		why = string(ee.Stderr)
	}
	return strings.TrimSpace(string(out)), why
}
