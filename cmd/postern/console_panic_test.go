package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/syncbuf"
)

// A panic in what follows the cards for the full-screen console ends the
// console, its terminal restored (the alternate screen left), with an
// error that says what failed, where it would end the program with the
// terminal left raw and on the alternate screen.
func TestConsoleFollowerPanicRestoresTheTerminal(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "agent.sock")
	for what, follow := range map[string]func(context.Context){
		"the loop that sends the cards": func(context.Context) {
			time.Sleep(200 * time.Millisecond)
			panic("a card follower's bug")
		},
		// The watcher reads the gateway in a goroutine of its own.
		"the watcher's reading of the gateway": func(ctx context.Context) {
			w := &cardWatcher{c: api.NewClient(sock), say: func(string) { panic("a card follower's bug") }}
			for {
				if _, err := w.next(ctx); err != nil {
					return
				}
			}
		},
	} {
		in, typed := io.Pipe()
		defer typed.Close()
		var out syncbuf.Buffer
		p := tea.NewProgram(newConsoleModel(api.NewClient(sock), nil), tea.WithInput(in), tea.WithOutput(&out), tea.WithWindowSize(80, 24))
		done := make(chan error, 1)
		go func() { done <- runConsole(p, follow) }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "a card follower's bug") {
				t.Fatalf("a panic in %s: the console ended with %v, want the follower's panic", what, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("a panic in %s: the console went on", what)
		}
		if !strings.Contains(out.String(), "\x1b[?1049l") {
			t.Fatalf("a panic in %s: the console did not leave the alternate screen: %q", what, out.String())
		}
	}
}
