package bastion

import (
	"context"
	"fmt"
	"io"
	"strings"

	gliderssh "github.com/gliderlabs/ssh"
	gossh "golang.org/x/crypto/ssh"

	"github.com/postern/postern/bastion/journal"
	"github.com/postern/postern/internal/safetext"
)

// ExitDenied is the exit status a client sees when postern refused a
// command (policy, approval, or the retry guard): the command was not
// sent. It is postern's own status, never a remote one.
const ExitDenied = 254

// ExitUnreachable is the status of a command the bastion could not start
// because the host could not be reached, trusted or authenticated to, or
// the gateway could not decide (undecided) or journal it.
const ExitUnreachable = 255

// session relays one session channel: the client's requests up, the
// remote command's output, status and signals down, and journals the
// command's start and end.
type session struct {
	s     *Server
	info  *connInfo
	dch   gossh.Channel
	probe string          // Resolve's probe: the entry it reads; not journaled, not a retry
	ctx   context.Context // ends when the client goes (see waiting.go)
	// entered: journalStart counted the command (Server.gate) until its
	// end is written (journaled).
	entered bool
	// requesterGone: a decision found that the ssh process behind the
	// connection had exited (goneAdvice).
	requesterGone bool
	// audited: the audit log recorded the command as started
	// (command_started), and records its end.
	audited bool
	// undispatched: the host accepted the command, and the journal could
	// not record it (outcome.go).
	undispatched bool
	// drain, while the command's output is relayed, waits until the
	// client has taken it (pump.drained): what tell writes comes after.
	drain func()
}

func (s *Server) handleSession(_ *gliderssh.Server, _ *gossh.ServerConn, nc gossh.NewChannel, ctx gliderssh.Context) {
	info, _ := ctx.Value(connInfoKey{}).(*connInfo)
	if info == nil {
		nc.Reject(gossh.Prohibited, "no destination")
		return
	}
	if info.sessions.Add(1) > maxSessions {
		info.sessions.Add(-1)
		nc.Reject(gossh.ResourceShortage, fmt.Sprintf("too many sessions on this connection (at most %d at once)", maxSessions))
		return
	}
	defer info.sessions.Add(-1)
	dch, dreqs, err := nc.Accept()
	if err != nil {
		return
	}
	cctx, cancel := clientContext(ctx, info)
	defer cancel()
	ss := &session{s: s, info: info, dch: dch, ctx: cctx}
	if later := ss.serve(dreqs); later != nil {
		// The channel counts until the client has closed it too: a
		// client that never answers the bastion's close would otherwise
		// open channels without end.
		<-later.done
	}
}

func reply(r *gossh.Request, ok bool) {
	if r.WantReply {
		r.Reply(ok, nil)
	}
}

// serve collects the requests that come before the command (a terminal,
// environment variables), then starts the command. It returns what reads
// the requests that follow, or nil when they ended before a command.
func (ss *session) serve(dreqs <-chan *gossh.Request) *laterRequests {
	var pty []byte
	var envs [][]byte
	envBytes := 0
	for req := range dreqs {
		switch req.Type {
		case "pty-req":
			ok := wellFormed(req.Type, req.Payload)
			if ok {
				pty = req.Payload
			}
			reply(req, ok)
		case "env":
			// The card shows the command, not the environment: only the
			// locale goes on (what OpenSSH sends and accepts by default),
			// and only one under which the host's shell reads the command
			// as the card showed it; a variable such as BASH_ENV would
			// change what runs.
			var m struct{ Name, Value string }
			// Past a bound they are refused: the bastion holds them
			// until the command starts.
			ok := wellFormed(req.Type, req.Payload) && gossh.Unmarshal(req.Payload, &m) == nil && localeVar(m.Name) && localeValue(m.Name, m.Value) &&
				len(envs) < maxEnvVars && envBytes+len(req.Payload) <= maxEnvBytes
			if ok {
				envs = append(envs, req.Payload)
				envBytes += len(req.Payload)
			}
			reply(req, ok)
		case "exec", "shell", "subsystem":
			later := readLater(dreqs)
			ctx, cancel := sessionContext(ss.context(), later.done)
			ss.ctx = ctx
			ss.start(req, pty, envs, later)
			cancel()
			return later
		default:
			// X11 and agent forwarding through the bastion are refused.
			reply(req, false)
		}
	}
	ss.dch.Close()
	return nil
}

// refuse tells the client why its command was not sent, and ends the
// session with postern's own status: ExitDenied for a refusal, 255 (what
// ssh reports when it cannot reach a host) when the host could not be
// reached or trusted. The journal says exactly which.
func (ss *session) refuse(req *gossh.Request, msg string, status int) {
	reply(req, true)
	ss.tell(msg)
	ss.dch.SendRequest("exit-status", false, gossh.Marshal(struct{ S uint32 }{uint32(status)}))
	ss.dch.Close()
}

// tellUnknown tells the client what happened (what) and that the outcome
// is unknown, and sends no exit status, so that ssh exits 255.
func (ss *session) tellUnknown(e *journal.Entry, what string) {
	ss.tell(fmt.Sprintf("%s; its outcome is UNKNOWN (journal entry %s). Do not retry blindly: see \"postern journal show %s\"", what, e.ID, e.ID))
	ss.dch.Close()
}

// tell writes msg on the client's stderr, a terminal, as a line of
// postern's: what the client chose (the host's name) and what the host
// or the network said (an error's words) are escaped in it.
func (ss *session) tell(msg string) {
	if ss.drain != nil {
		ss.drain()
	}
	io.WriteString(ss.dch.Stderr(), "postern: "+safetext.Terminal(msg)+"\r\n")
}

// localeVar reports whether name is a locale variable: LANG, LANGUAGE or
// LC_*.
func localeVar(name string) bool {
	return name == "LANG" || name == "LANGUAGE" || strings.HasPrefix(name, "LC_")
}

// localeValue reports whether value, given to the locale variable name,
// leaves the command as the card showed it: the C or POSIX locale, or one
// whose character set is UTF-8, named in the characters locale names are
// made of. Under a locale whose multibyte characters hold the byte of a
// backslash or a backquote (BIG5, GBK, Shift JIS) the shell reads other
// commands in the same bytes: the backslash that escapes a quote on the
// card ends a character there, and what the card showed inside a string
// runs. LANGUAGE, a list of languages for messages, sets no character set.
func localeValue(name, value string) bool {
	if strings.ContainsFunc(value, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("_.@:-", r))
	}) {
		return false
	}
	if name == "LANGUAGE" {
		return true
	}
	if strings.Contains(value, ":") {
		return false
	}
	lang, _, _ := strings.Cut(value, "@")
	_, charset, dotted := strings.Cut(lang, ".")
	switch strings.ToLower(charset) {
	case "utf-8", "utf8":
		return true
	}
	return !dotted && (value == "" || value == "C" || value == "POSIX")
}

// maxEnvVars and maxEnvBytes bound the environment a client may pass on
// (OpenSSH sends LANG and a dozen LC_ variables at most); the env
// requests past them are refused.
const (
	maxEnvVars  = 32
	maxEnvBytes = 16 << 10
)

// maxSessions bounds the session channels open at once on one client
// connection, as OpenSSH's sshd does by default (MaxSessions); a channel
// is open until the client has closed it.
const maxSessions = 10

// wellFormed reports whether the payload of a session request the relay
// passes on is what RFC 4254 says that request carries, its names and
// values C strings (no NUL byte). OpenSSH's sshd ends the whole
// connection on a malformed one, which would cut the commands running on
// it: such a request is refused instead.
func wellFormed(typ string, payload []byte) bool {
	var err error
	switch typ {
	case "pty-req":
		var m struct {
			Term                         string
			Columns, Rows, Width, Height uint32
			Modes                        string
		}
		if err = gossh.Unmarshal(payload, &m); err == nil {
			return cString(m.Term) && modesWellFormed([]byte(m.Modes))
		}
	case "env":
		var m struct{ Name, Value string }
		if err = gossh.Unmarshal(payload, &m); err == nil {
			return cString(m.Name) && cString(m.Value)
		}
	case "window-change":
		var m struct{ Columns, Rows, Width, Height uint32 }
		err = gossh.Unmarshal(payload, &m)
	case "signal":
		var m struct{ Name string }
		if err = gossh.Unmarshal(payload, &m); err == nil {
			return cString(m.Name)
		}
	case "break":
		var m struct{ Millis uint32 }
		err = gossh.Unmarshal(payload, &m)
	case "xon-xoff":
		var m struct{ ClientCan bool }
		err = gossh.Unmarshal(payload, &m)
	case "shell":
		return len(payload) == 0
	default:
		return false
	}
	return err == nil
}

// cString reports whether s reads whole as a C string: it holds no NUL.
func cString(s string) bool { return strings.IndexByte(s, 0) < 0 }

// modesWellFormed reports whether encoded terminal modes parse as sshd
// parses them: opcodes 1 to 159 each followed by a uint32, up to the end
// opcode 0 or an opcode of 160 or more, which ends the parsing.
func modesWellFormed(b []byte) bool {
	for len(b) > 0 {
		op := b[0]
		switch {
		case op == 0 || op >= 160:
			return true
		case len(b) < 5:
			return false
		}
		b = b[5:]
	}
	return true
}
