// Package syslog sends messages to a syslog daemon in the format of RFC
// 5424, for people who ship their logs to a log platform: the gateway
// exports its audit events and checkpoints through it ([audit] syslog).
//
//	w, err := syslog.Dial(syslog.Config{Address: "udp:logs.example:514", Facility: syslog.AuthPriv, AppName: "postern"})
//	w.Send(syslog.Message{Severity: syslog.Info, MsgID: "sign", Data: …, Text: …})
//
// Send never blocks: messages wait in a bounded queue for the writer
// goroutine, and a message that finds the queue full is dropped and
// counted (Dropped). The writer reconnects after a failure, with a pause
// that doubles up to half a minute, and, on a stream, before a message
// when the daemon has closed the connection (it restarted, or dropped an
// idle client): a message written into a closed connection would be taken
// by the kernel and lost. A message in flight when the daemon goes may
// still be lost; the audit log, not syslog, is the record that must not
// lose an event.
//
// # Addresses
//
//	/dev/log, unixgram:PATH  a local daemon's datagram socket, one message per datagram
//	unix:PATH                a stream socket, messages framed by octet counting (RFC 6587)
//	udp:HOST:PORT            RFC 5426, one message per datagram
//	tcp:HOST:PORT            octet counting, as RFC 5425 frames messages (without TLS)
//
// # The format
//
//	<PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID MSGID [SD-ID NAME="VALUE" …] BOM MSG
//
// PRI is the facility times eight plus the severity; the timestamp is
// RFC 3339 in UTC with microseconds; header fields are printable ASCII,
// cut to their maximum lengths ("-" when empty); structured-data values
// escape '"', '\' and ']' with a backslash; MSG is UTF-8 after a byte
// order mark, cut to MaxText bytes.
package syslog

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"
)

// Facility is a syslog facility.
type Facility int

// The facilities a gateway may log as.
const (
	Auth     Facility = 4
	AuthPriv Facility = 10
	Local0   Facility = 16
)

// ParseFacility reads "auth", "authpriv" or "local0" to "local7".
func ParseFacility(s string) (Facility, error) {
	switch s {
	case "auth":
		return Auth, nil
	case "authpriv":
		return AuthPriv, nil
	}
	if n, ok := strings.CutPrefix(s, "local"); ok && len(n) == 1 && n[0] >= '0' && n[0] <= '7' {
		return Local0 + Facility(n[0]-'0'), nil
	}
	return 0, fmt.Errorf("syslog facility %q: want auth, authpriv or local0 to local7", s)
}

// Severity is a syslog severity.
type Severity int

// The severities the gateway uses.
const (
	Warning Severity = 4
	Notice  Severity = 5
	Info    Severity = 6
)

// Element is one structured-data element: an SD-ID and its parameters,
// in order.
type Element struct {
	ID     string
	Params [][2]string // name, value
}

// Message is one message to send.
type Message struct {
	Time     time.Time // zero: now
	Severity Severity
	MsgID    string
	Data     []Element
	Text     string
}

// Limits of the format and of what is sent.
const (
	maxHostname = 255
	maxAppName  = 48
	maxProcID   = 128
	maxMsgID    = 32
	maxSDName   = 32
	// MaxText bounds MSG: rsyslog's default message size is 8 KiB.
	MaxText = 6 << 10
)

// Header is what every message of one sender carries.
type Header struct {
	Facility Facility
	Hostname string
	AppName  string
	ProcID   string
}

// Format renders m as an RFC 5424 message.
func Format(h Header, m Message) []byte {
	t := m.Time
	if t.IsZero() {
		t = time.Now()
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "<%d>1 %s %s %s %s %s ", int(h.Facility)*8+int(m.Severity),
		t.UTC().Format("2006-01-02T15:04:05.000000Z07:00"),
		field(h.Hostname, maxHostname), field(h.AppName, maxAppName), field(h.ProcID, maxProcID), field(m.MsgID, maxMsgID))
	if len(m.Data) == 0 {
		b.WriteByte('-')
	}
	for _, e := range m.Data {
		b.WriteByte('[')
		b.WriteString(name(e.ID))
		for _, p := range e.Params {
			b.WriteByte(' ')
			b.WriteString(name(p[0]))
			b.WriteString(`="`)
			b.WriteString(sdValue(p[1]))
			b.WriteByte('"')
		}
		b.WriteByte(']')
	}
	if m.Text != "" {
		b.WriteString(" \ufeff")
		b.WriteString(text(m.Text))
	}
	return b.Bytes()
}

// field keeps the printable ASCII of s (no space), at most n bytes; "-"
// when nothing is left.
func field(s string, n int) string {
	f := strings.Map(func(r rune) rune {
		if r > 32 && r < 127 {
			return r
		}
		return -1
	}, s)
	if len(f) > n {
		f = f[:n]
	}
	if f == "" {
		return "-"
	}
	return f
}

// name is an SD-ID or parameter name: printable ASCII but '=', ' ', ']'
// and '"', at most maxSDName bytes.
func name(s string) string {
	f := strings.Map(func(r rune) rune {
		if r > 32 && r < 127 && r != '=' && r != ']' && r != '"' {
			return r
		}
		return '_'
	}, s)
	if len(f) > maxSDName {
		f = f[:maxSDName]
	}
	if f == "" {
		return "_"
	}
	return f
}

// sdValue escapes a parameter value: '"', '\' and ']' get a backslash;
// invalid UTF-8 is replaced.
func sdValue(s string) string {
	s = strings.ToValidUTF8(s, "\ufffd")
	var b strings.Builder
	for _, r := range s {
		if r == '"' || r == '\\' || r == ']' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// text is MSG: valid UTF-8 (a newline would end the message for many
// readers: it is written as a space), at most MaxText bytes.
func text(s string) string {
	s = strings.ToValidUTF8(s, "\ufffd")
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "\x00", " ").Replace(s)
	if len(s) <= MaxText {
		return s
	}
	cut := MaxText - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Config configures a Writer.
type Config struct {
	// Address is where the daemon listens (see the package
	// documentation); "" means /dev/log.
	Address  string
	Facility Facility
	AppName  string
	// Hostname defaults to os.Hostname.
	Hostname string
	// Queue is how many messages may wait; 0 means 4096.
	Queue int
}

// Writer sends messages to one syslog daemon.
type Writer struct {
	hdr     Header
	network string
	addr    string
	framed  bool // octet counting (streams)

	queue   chan []byte
	dropped atomic.Uint64
	sent    atomic.Uint64
	done    chan struct{}
	// closing is set, and queue closed, under qmu held to write; Send
	// holds it to read, so that it never sends on a closed queue.
	qmu     sync.RWMutex
	closing atomic.Bool

	mu      sync.Mutex
	lastErr error
}

// ParseAddress splits an address of the package documentation into a
// network for net.Dial and an address, and says whether messages are
// framed.
func ParseAddress(a string) (network, addr string, framed bool, err error) {
	switch {
	case a == "":
		return "unixgram", "/dev/log", false, nil
	case strings.HasPrefix(a, "/"):
		return "unixgram", a, false, nil
	}
	scheme, rest, ok := strings.Cut(a, ":")
	if !ok || rest == "" {
		return "", "", false, fmt.Errorf("syslog address %q: want unixgram:PATH, unix:PATH, udp:HOST:PORT or tcp:HOST:PORT", a)
	}
	switch scheme {
	case "unixgram", "unix":
		if !strings.HasPrefix(rest, "/") {
			return "", "", false, fmt.Errorf("syslog address %q: give an absolute path", a)
		}
		return scheme, rest, scheme == "unix", nil
	case "udp", "tcp":
		if _, _, err := net.SplitHostPort(rest); err != nil {
			return "", "", false, fmt.Errorf("syslog address %q: %v", a, err)
		}
		return scheme, rest, scheme == "tcp", nil
	}
	return "", "", false, fmt.Errorf("syslog address %q: unknown transport %q", a, scheme)
}

// Dial checks cfg and starts the writer; it connects in the background,
// and again after every failure.
func Dial(cfg Config) (*Writer, error) {
	network, addr, framed, err := ParseAddress(cfg.Address)
	if err != nil {
		return nil, err
	}
	if cfg.Hostname == "" {
		cfg.Hostname, _ = os.Hostname()
	}
	if cfg.Queue <= 0 {
		cfg.Queue = 4096
	}
	w := &Writer{
		hdr:     Header{Facility: cfg.Facility, Hostname: cfg.Hostname, AppName: cfg.AppName, ProcID: strconv.Itoa(os.Getpid())},
		network: network, addr: addr, framed: framed,
		queue: make(chan []byte, cfg.Queue),
		done:  make(chan struct{}),
	}
	go w.run()
	return w, nil
}

// Send queues m; it reports false when the queue was full, or the writer
// closed, and m was dropped.
func (w *Writer) Send(m Message) bool {
	msg := Format(w.hdr, m)
	w.qmu.RLock()
	defer w.qmu.RUnlock()
	if !w.closing.Load() {
		select {
		case w.queue <- msg:
			return true
		default:
		}
	}
	w.dropped.Add(1)
	return false
}

// Dropped counts the messages dropped since Dial: the queue was full, the
// writer closed, or it closed with messages it could not send.
func (w *Writer) Dropped() uint64 { return w.dropped.Load() }

// Sent counts the messages written to the daemon.
func (w *Writer) Sent() uint64 { return w.sent.Load() }

// Err returns the last error of the connection, nil once a message went
// through again.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastErr
}

// Close sends what is queued (waiting at most a few seconds) and stops;
// what it cannot send, the daemon gone, is counted as dropped.
func (w *Writer) Close() {
	w.qmu.Lock()
	if !w.closing.Load() {
		w.closing.Store(true)
		close(w.queue)
	}
	w.qmu.Unlock()
	select {
	case <-w.done:
	case <-time.After(3 * time.Second):
	}
}

func (w *Writer) setErr(err error) {
	w.mu.Lock()
	w.lastErr = err
	w.mu.Unlock()
}

// run writes queued messages, connecting as needed.
func (w *Writer) run() {
	defer close(w.done)
	var conn net.Conn
	pause := time.Duration(0)
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for msg := range w.queue {
		for {
			if conn == nil {
				c, err := net.DialTimeout(w.network, w.addr, 5*time.Second)
				if err != nil {
					w.setErr(err)
					if w.closing.Load() {
						// Closed, and the daemon is gone: the rest is
						// dropped, and counted.
						w.dropped.Add(1)
						for range w.queue {
							w.dropped.Add(1)
						}
						return
					}
					pause = min(max(2*pause, 100*time.Millisecond), 30*time.Second)
					time.Sleep(pause)
					continue
				}
				conn = c
			}
			if w.framed && closedByPeer(conn) {
				conn.Close()
				conn = nil
				continue
			}
			if err := w.write(conn, msg); err != nil {
				w.setErr(err)
				conn.Close()
				conn = nil
				continue
			}
			pause = 0
			w.sent.Add(1)
			w.setErr(nil)
			break
		}
	}
}

// closedByPeer reports whether the other end of the stream c has closed
// it (or reset it): a look at what waits to be read, without waiting or
// taking it. A daemon sends nothing on a syslog stream, so anything but
// "nothing yet" means the connection is gone.
func closedByPeer(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	gone := false
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		gone = n == 0 && err == nil || err != nil && err != syscall.EAGAIN && err != syscall.EWOULDBLOCK && err != syscall.EINTR
		return true // never wait for the descriptor
	})
	return gone || err != nil
}

func (w *Writer) write(c net.Conn, msg []byte) error {
	c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if w.framed {
		msg = append([]byte(strconv.Itoa(len(msg))+" "), msg...)
	}
	n, err := c.Write(msg)
	if err == nil && n != len(msg) {
		err = errors.New("short write")
	}
	return err
}
