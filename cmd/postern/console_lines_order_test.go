package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/syncbuf"
)

// The line console says what an answer did before it says that the card
// went away, however the gateway's two words cross: the change that the
// card is gone, sent on the stream of cards, reaches the console here
// before the answer's own reply does.
func TestLineConsoleSaysTheAnswerBeforeTheCardClosed(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "agent.sock")
	l, err := net.Listen("unix", api.ControlSocket(sock))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var out, errw syncbuf.Buffer
	gone := make(chan struct{})
	reply := func(c net.Conn, v any) {
		b, _ := json.Marshal(v)
		r, _ := json.Marshal(api.Response{Result: b})
		c.Write(append(r, '\n'))
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				line, _ := bufio.NewReader(c).ReadBytes('\n')
				var req api.Request
				json.Unmarshal(line, &req)
				switch req.Op {
				case api.OpCardsFollow:
					c.Write([]byte("{}\n"))
					reply(c, api.CardsDelta{Seq: 1, Reset: true, Cards: []api.Card{sessionCard()}})
					<-gone
					reply(c, api.CardsDelta{Seq: 2, Since: 1, Gone: []string{"C1"}})
					io.Copy(io.Discard, c)
				case api.OpAnswer:
					close(gone)
					// The console has the change before this reply.
					for end := time.Now().Add(2 * time.Second); time.Now().Before(end) && !strings.Contains(out.String(), "closed"); {
						time.Sleep(10 * time.Millisecond)
					}
					reply(c, api.AnswerResult{Applied: "once"})
				default:
					c.Write([]byte(`{"error":"not here","code":"internal"}` + "\n"))
				}
			}()
		}
	}()
	in, typed := io.Pipe()
	defer typed.Close()
	go approveLines(api.NewClient(sock), in, &out, &errw, false)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "Card C1") {
		if time.Now().After(deadline) {
			t.Fatalf("no card printed:\n%s\n%s", out.String(), errw.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	typed.Write([]byte("once C1\n"))
	for !strings.Contains(out.String(), "approved") || !strings.Contains(out.String(), "closed") {
		if time.Now().After(deadline) {
			t.Fatalf("the answer and the card's end not both said:\n%s\n%s", out.String(), errw.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	got := out.String()
	if strings.Index(got, "C1: approved once") > strings.Index(got, "C1: closed") {
		t.Fatalf("the line console said the card closed before what its answer did:\n%s", got[strings.Index(got, "\n\n")+2:])
	}
}
