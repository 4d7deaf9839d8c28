package sshagent

import (
	"log/slog"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/internal/syncbuf"
)

// What a client sends is as long as a request (256 KiB): the lines a
// connection logs about it are cut, each string and error to 1 KiB, not
// as long as the request, or twice that where an error repeats it.
func TestConnectionLogLinesAreBounded(t *testing.T) {
	var out syncbuf.Buffer
	ts := startServer(t, slog.New(slog.NewTextHandler(&out, nil)))
	long := strings.Repeat("x", 200<<10)
	seen := 0
	for name, m := range map[string][]byte{
		"an unknown extension": append([]byte{msgExtension}, ssh.Marshal(extensionMsg{Name: long})...),
		"an unknown key type":  append([]byte{msgAddIdentity}, ssh.Marshal(struct{ T string }{long})...),
		"an unknown constraint": append(append([]byte{msgAddIDConstrained}, addMessages(t)[0][1:]...),
			append([]byte{constrainExtension}, ssh.Marshal(struct{ N string }{long})...)...),
		"a provider's path": append([]byte{msgAddSmartcardKey}, ssh.Marshal(struct{ P, PIN string }{"/" + long, ""})...),
	} {
		c := ts.rawConn(t)
		writeFrame(c, m)
		if reply := readReply(t, c); reply != msgFailure {
			t.Fatalf("%s: reply %d", name, reply)
		}
		log := out.String()[seen:]
		seen += len(log)
		if !strings.Contains(log, "xxxx") {
			t.Fatalf("%s: the log does not name what was refused:\n%.300s", name, log)
		}
		for _, line := range strings.Split(log, "\n") {
			if len(line) > 4<<10 {
				t.Fatalf("%s: a log line of %d bytes: %.200s…", name, len(line), line)
			}
		}
	}
}
