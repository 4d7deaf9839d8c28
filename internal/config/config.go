// Package config reads postern's configuration file,
// $XDG_CONFIG_HOME/postern/config.toml (or the file named by
// $POSTERN_CONFIG). The file is optional: without it every setting has a
// working default. Parsing is strict: an unknown key, a wrong type or a
// bad value is an error that names the file, and where possible the line.
//
// This package only reads and checks the file; the approvals package
// turns it into policy.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/postern/postern/internal/safetext"
	"github.com/postern/postern/internal/smallfile"
	"github.com/postern/postern/internal/syslog"
)

// File is the configuration as written.
type File struct {
	// Approval is the default approval mode: none, session, per-call or
	// deny. Default "session".
	Approval string `toml:"approval"`
	// CardTimeout is how long a request waits for an answer before it is
	// denied, and, once approved, how long a signature waits for the
	// device or upstream agent that holds the key (a touch, the
	// upstream's own confirmation). Default 60s.
	CardTimeout Duration `toml:"card_timeout"`
	// KnownHosts lists the files whose names are given to verified host
	// keys. Default ~/.ssh/known_hosts and /etc/ssh/ssh_known_hosts.
	KnownHosts []string `toml:"known_hosts"`
	// Agents names the programs (AI agents) a card preselects as the
	// subject of a session approval when one is among the requester's
	// ancestors. Default claude, codex, aider.
	Agents []string `toml:"agents"`
	// SessionScope is what a session approval covers: "key" (the key, for
	// every destination the policy does not ask about on each call) or
	// "destination" (the key for the one verified destination approved).
	// Default "key".
	SessionScope string `toml:"session_scope"`
	// SessionLifetime ends session approvals after this long even while
	// their run lives; 0 (the default) means only the run's end does.
	SessionLifetime Duration `toml:"session_lifetime"`
	// CardCooldown is how long requests from a run are refused without a
	// new card after one of its cards went unanswered, or after it
	// withdrew cards too often (approvals/withdrawn.go). Default 30s.
	CardCooldown Duration `toml:"card_cooldown"`
	// UnknownDestination is the least mode a login whose destination has
	// no name gets (the agent could not verify it, or it is not in the
	// host inventory). It gets the strictest mode any host rule could give
	// it in any case; this can only make it stricter. Default: none of its
	// own.
	UnknownDestination string `toml:"unknown_destination"`
	// Rules adjust the approval mode for hosts, keys and programs.
	Rules []Rule `toml:"rule"`
	// Bastion configures the optional local bastion.
	Bastion Bastion `toml:"bastion"`
	// Upstream is the socket of another agent whose keys the gateway
	// lists beside its own and gates like them (postern agent --upstream
	// overrides it). A leading "~/" and $VARIABLES are expanded. Read
	// when the gateway starts, not on a reload.
	Upstream string `toml:"upstream"`
	// UpstreamChanges says where ssh-add's adds and removes go with an
	// upstream agent: "refuse" (added keys are postern's own; removing
	// an upstream key is refused) or "forward" (to the upstream agent).
	// Default "refuse". Read when the gateway starts.
	UpstreamChanges string `toml:"upstream_changes"`
	// Audit configures where the audit log's events go besides the log.
	Audit Audit `toml:"audit"`
	// Run configures what a confined run ("postern run") may write and
	// see.
	Run Run `toml:"run"`
}

// Run configures the confinement of runs. Paths are absolute or start
// with "~/"; paths that do not exist are ignored. What postern itself
// hides or shows read-only (its state, sockets, configuration,
// known_hosts, the askpass program, the user's session) is not
// configurable.
type Run struct {
	// ReadWrite lists trees a run may write besides its working
	// directory, shared with the person's programs. Default none: a run
	// has a cache directory of its own (confine.Spec.Cache).
	ReadWrite []string `toml:"read_write"`
	// ReadOnly lists paths shown read-only, even inside a hidden or
	// writable tree (such as a directory under /tmp, which is private to
	// a run). Default none.
	ReadOnly []string `toml:"read_only"`
	// Hide lists trees replaced by empty private directories. Default
	// none.
	Hide []string `toml:"hide"`
}

// Audit configures the copies of the audit log's events and checkpoints
// kept elsewhere.
type Audit struct {
	// Syslog, when set, sends every event and every checkpoint to a
	// syslog daemon as well, in RFC 5424: "/dev/log" or "unixgram:PATH",
	// "unix:PATH", "udp:HOST:PORT" or "tcp:HOST:PORT". Default: none.
	Syslog string `toml:"syslog"`
	// SyslogFacility is auth, authpriv or local0 to local7. Default
	// authpriv.
	SyslogFacility string `toml:"syslog_facility"`
}

// Bastion configures the local bastion that relays and journals remote
// commands.
type Bastion struct {
	// Enabled starts the bastion with the gateway. Default false.
	Enabled bool `toml:"enabled"`
	// Socket is the bastion's socket. Default
	// $XDG_RUNTIME_DIR/postern/bastion.sock.
	Socket string `toml:"socket"`
	// Hosts are the ssh_config host patterns "postern ssh-config" sends
	// through the bastion.
	Hosts []string `toml:"hosts"`
	// Markers are globs over host names whose commands are wrapped to
	// leave start and result markers on the remote host.
	Markers []string `toml:"markers"`
	// KnownHosts verify the real hosts. Default: the top-level known_hosts.
	KnownHosts []string `toml:"known_hosts"`
	// RequirePQKex refuses real hosts that offer no post-quantum key
	// exchange the bastion speaks (mlkem768x25519-sha256, OpenSSH 9.9 and
	// later). Default false: such hosts get a classical exchange, and the
	// log warns.
	RequirePQKex bool `toml:"require_pq_kex"`
	// StopGrace is how long a stopping gateway lets running commands
	// finish before it cuts them off (their outcome is then unknown).
	// Default 10s.
	StopGrace Duration `toml:"stop_grace"`
}

// A Rule sets the approval mode of the requests it matches. Every field
// given must match. When several rules match, the strictest mode wins
// (deny, per-call, session, none); when none matches, Approval applies.
type Rule struct {
	// Host is a glob over the names the host inventory ("postern hosts")
	// gives the verified host key of the destination.
	Host string `toml:"host"`
	// Class is a glob over the classes the host inventory gives it, such
	// as "production".
	Class string `toml:"class"`
	// Key is a key fingerprint ("SHA256:…") or a glob over key comments.
	Key string `toml:"key"`
	// Exe is "sha256:HEX" or a glob over the absolute path of the
	// executable of the requesting process or of the run, as the kernel
	// shows it and the gateway verified it. A bare name is refused: any
	// program can be called "git".
	Exe string `toml:"exe"`
	// Approval is the mode for matching requests.
	Approval string `toml:"approval"`
}

// Duration is a time.Duration written as a string such as "60s".
type Duration struct{ time.Duration }

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("not a duration (such as 90s, 15m or 8h): %s", quoted(string(b)))
	}
	if v < 0 {
		return fmt.Errorf("negative duration %s", quoted(string(b)))
	}
	d.Duration = v
	return nil
}

// Defaults returns the configuration used when no file exists.
func Defaults() File {
	return File{
		Approval:        "session",
		CardTimeout:     Duration{60 * time.Second},
		KnownHosts:      []string{"~/.ssh/known_hosts", "/etc/ssh/ssh_known_hosts"},
		Agents:          []string{"claude", "codex", "aider"},
		SessionScope:    "key",
		CardCooldown:    Duration{30 * time.Second},
		UpstreamChanges: "refuse",
		Bastion:         Bastion{StopGrace: Duration{10 * time.Second}},
		Audit:           Audit{SyslogFacility: "authpriv"},
	}
}

// MaxSize bounds the configuration file; anything larger is a mistake.
const MaxSize = 1 << 20

// maxUnknownListed is how many unknown settings an error names.
const maxUnknownListed = 2

// Load reads path. A missing file yields the defaults and no error.
func Load(path string) (File, error) {
	b, err := smallfile.Read(path, MaxSize)
	if errors.Is(err, fs.ErrNotExist) {
		return Defaults(), nil
	}
	if err != nil {
		return File{}, err
	}
	return Parse(path, b)
}

// Errors of Reload: the file is gone, or says nothing.
var (
	ErrMissing = errors.New("the configuration file was removed")
	ErrEmpty   = errors.New("the configuration file holds no setting")
)

// Reload reads path again for a running gateway. Unlike Load, a missing
// file, or one with no setting at all (empty, or comments only), is not
// the defaults: Reload returns ErrMissing or ErrEmpty, and the caller
// keeps the policy in force. A file that vanished or was emptied is more
// often a crash, a half-done edit or a hostile program than a person
// asking for the defaults, and the defaults drop every rule.
//
// It returns the bytes it parsed with what it read from them: a caller
// that keeps the file's contents (as the approved configuration) keeps
// those, never a second read of a file that may have changed between the
// two.
func Reload(path string) (File, []byte, error) {
	b, err := smallfile.Read(path, MaxSize)
	if errors.Is(err, fs.ErrNotExist) {
		return File{}, nil, fmt.Errorf("%s: %w", path, ErrMissing)
	}
	if err != nil {
		return File{}, nil, err
	}
	f, keys, err := parse(path, b, true)
	if err == nil && keys == 0 {
		return File{}, nil, fmt.Errorf("%s: %w", path, ErrEmpty)
	}
	return f, b, err
}

// Parse parses the contents of a configuration file; name is used in
// error messages.
func Parse(name string, b []byte) (File, error) {
	f, _, err := parse(name, b, true)
	return f, err
}

// ParseApproved parses a configuration a person approved, perhaps under
// an older postern, which took values this one refuses in a
// configuration file (a rule's pattern, a relative path). Its values are
// not checked again: it is the approved policy that a file is judged
// against, and refusing it would leave none, so that the file, whatever
// it says, would be taken as approved. What does not decode is an error
// all the same.
func ParseApproved(name string, b []byte) (File, error) {
	f, _, err := parse(name, b, false)
	return f, err
}

// parse is Parse, without the check of the values unless values is set,
// and counts the settings the file holds.
func parse(name string, b []byte, values bool) (File, int, error) {
	if len(b) > MaxSize {
		return File{}, 0, fmt.Errorf("%s: file larger than %d bytes", name, MaxSize)
	}
	if err := checkShape(b); err != nil {
		return File{}, 0, fmt.Errorf("%s:%w", name, err)
	}
	f := Defaults()
	md, err := toml.Decode(string(b), &f)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			// The parser's message quotes the file's bytes as they are
			// (a NUL for its end, say): shown on one line, escaped.
			msg := safetext.Field(pe.Message, safetext.Line)
			if pe.LastKey != "" {
				msg = safetext.Field(pe.LastKey, safetext.Path) + ": " + msg
			}
			// The TOML parser numbers a string cut by a newline at the
			// file's start line 0; the file's lines start at 1.
			return File{}, 0, fmt.Errorf("%s:%d: %s", name, max(pe.Position.Line, 1), msg)
		}
		// A value's own check (a duration's): its text is cut there.
		return File{}, 0, fmt.Errorf("%s: %s", name, safetext.Field(err.Error(), safetext.Line))
	}
	if und := md.Undecoded(); len(und) > 0 {
		// A few, each cut: the file's keys, as many and as long as it
		// holds, are not copied into an error kept and logged.
		var keys []string
		for _, k := range und[:min(len(und), maxUnknownListed)] {
			keys = append(keys, safetext.Field(k.String(), safetext.Path))
		}
		list := strings.Join(keys, ", ")
		if more := len(und) - len(keys); more > 0 {
			list += fmt.Sprintf(", and %d more", more)
		}
		if line := unknownLine(b, und[0]); line > 0 {
			return File{}, 0, fmt.Errorf("%s:%d: unknown setting %s", name, line, list)
		}
		return File{}, 0, fmt.Errorf("%s: unknown setting %s", name, list)
	}
	if err := checkKeyCase(md); err != nil {
		return File{}, 0, fmt.Errorf("%s: %w", name, err)
	}
	if !values {
		return f, len(md.Keys()), nil
	}
	if err := f.check(); err != nil {
		if se, ok := errors.AsType[*settingError](err); ok {
			if line := settingLine(b, se.Table, se.N, se.Key); line > 0 {
				return File{}, 0, fmt.Errorf("%s:%d: %w", name, line, err)
			}
		}
		return File{}, 0, fmt.Errorf("%s: %w", name, err)
	}
	return f, len(md.Keys()), nil
}

func checkMode(m string) error {
	switch m {
	case "none", "session", "per-call", "deny":
		return nil
	}
	return fmt.Errorf("approval = %s: want none, session, per-call or deny", quoted(m))
}

func (f *File) check() error {
	if err := checkMode(f.Approval); err != nil {
		return badSetting("", "approval", "%v", err)
	}
	if f.CardTimeout.Duration <= 0 {
		return badSetting("", "card_timeout", "card_timeout must be positive")
	}
	if f.UnknownDestination != "" {
		if err := checkMode(f.UnknownDestination); err != nil {
			return badSetting("", "unknown_destination", "unknown_destination: %v", err)
		}
	}
	switch f.SessionScope {
	case "key", "destination":
	default:
		return badSetting("", "session_scope", "session_scope = %s: want key or destination", quoted(f.SessionScope))
	}
	switch f.UpstreamChanges {
	case "refuse", "forward":
	default:
		return badSetting("", "upstream_changes", "upstream_changes = %s: want refuse or forward", quoted(f.UpstreamChanges))
	}
	// A process is matched by the base name of its executable, its
	// kernel name or its first arguments: a path, or nothing, matches
	// none.
	for _, a := range f.Agents {
		switch {
		case a == "":
			return badSetting("", "agents", "agents = %s: name a program", quoted(a))
		case strings.Contains(a, "/"):
			return badSetting("", "agents", "agents = %s: name the program (%s), not its path", quoted(a), quoted(path.Base(a)))
		}
	}
	for _, g := range f.Bastion.Markers {
		if _, err := path.Match(g, ""); err != nil {
			return badSetting("bastion", "markers", "[bastion] markers: bad pattern %s", quoted(g))
		}
		if strings.ContainsRune(g, '!') {
			return badSetting("bastion", "markers", "[bastion] markers: %s: %s", quoted(g), noNegation)
		}
	}
	if f.Bastion.Socket != "" && !strings.HasPrefix(f.Bastion.Socket, "/") {
		return badSetting("bastion", "socket", "[bastion] socket = %s: give an absolute path", quoted(f.Bastion.Socket))
	}
	if f.Audit.Syslog != "" {
		if _, _, _, err := syslog.ParseAddress(f.Audit.Syslog); err != nil {
			return badSetting("audit", "syslog", "[audit] %v", err)
		}
	}
	if _, err := syslog.ParseFacility(f.Audit.SyslogFacility); err != nil {
		return badSetting("audit", "syslog_facility", "[audit] %v", err)
	}
	// A relative path would be read from the directory the gateway was
	// started in, which changes from one start to the next.
	for _, l := range []struct {
		table, key string
		paths      []string
	}{
		{"", "known_hosts", f.KnownHosts}, {"bastion", "known_hosts", f.Bastion.KnownHosts},
		{"run", "read_write", f.Run.ReadWrite}, {"run", "read_only", f.Run.ReadOnly}, {"run", "hide", f.Run.Hide},
	} {
		for _, p := range l.paths {
			if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~/") {
				name := l.key
				if l.table != "" {
					name = "[" + l.table + "] " + l.key
				}
				return badSetting(l.table, l.key, "%s = %s: give an absolute path or one starting with ~/", name, quoted(p))
			}
		}
	}
	for i, r := range f.Rules {
		if err := checkRule(i+1, r); err != nil {
			return err
		}
	}
	return nil
}
