package sshagent

import (
	"context"
	"log/slog"

	"github.com/postern/postern/internal/safetext"
)

// connLog is a connection's logger: it names the peer (pid and
// executable) in every line, and cuts the line's message and each of its
// strings and errors to maxKeptField. It is made when a line is logged,
// so that a connection holds none while it waits.
type connLog struct{ c *conn }

func (l connLog) Debug(msg string, args ...any) { l.log(slog.LevelDebug, msg, args) }
func (l connLog) Info(msg string, args ...any)  { l.log(slog.LevelInfo, msg, args) }
func (l connLog) Warn(msg string, args ...any)  { l.log(slog.LevelWarn, msg, args) }
func (l connLog) Error(msg string, args ...any) { l.log(slog.LevelError, msg, args) }

func (l connLog) log(level slog.Level, msg string, args []any) {
	base := l.c.srv.Log
	if !base.Enabled(context.Background(), level) {
		return
	}
	h := &peerHandler{h: base.Handler(), pid: l.c.peer.PID, exe: l.c.peer.Exe.Path}
	slog.New(h).Log(context.Background(), level, msg, args...)
}

// peerHandler is a connection's log handler: it names the peer (pid and
// executable) in every line it passes on. Unlike Logger.With, it formats
// nothing ahead.
type peerHandler struct {
	h   slog.Handler
	pid int
	exe string
}

func (p *peerHandler) Enabled(ctx context.Context, l slog.Level) bool { return p.h.Enabled(ctx, l) }

func (p *peerHandler) Handle(ctx context.Context, r slog.Record) error {
	named := slog.NewRecord(r.Time, r.Level, safetext.Cut(r.Message, maxKeptField), r.PC)
	named.AddAttrs(slog.Int("pid", p.pid), slog.String("exe", p.exe))
	r.Attrs(func(a slog.Attr) bool { named.AddAttrs(cutAttr(a)); return true })
	return p.h.Handle(ctx, named)
}

func (p *peerHandler) WithAttrs(as []slog.Attr) slog.Handler {
	attrs := []slog.Attr{slog.Int("pid", p.pid), slog.String("exe", p.exe)}
	for _, a := range as {
		attrs = append(attrs, cutAttr(a))
	}
	return p.h.WithAttrs(attrs)
}

// cutAttr cuts a string or an error a connection logs to maxKeptField:
// what a client sends (an extension's name, a key type, a provider's
// path, a comment) is as long as a request, and would make each line it
// is in as long, twice over where an error repeats it.
func cutAttr(a slog.Attr) slog.Attr {
	switch v := a.Value.Resolve(); {
	case v.Kind() == slog.KindString:
		return slog.String(a.Key, safetext.Cut(v.String(), maxKeptField))
	case v.Kind() == slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, safetext.Cut(err.Error(), maxKeptField))
		}
	}
	return a
}

func (p *peerHandler) WithGroup(name string) slog.Handler {
	return p.h.WithAttrs([]slog.Attr{slog.Int("pid", p.pid), slog.String("exe", p.exe)}).WithGroup(name)
}
