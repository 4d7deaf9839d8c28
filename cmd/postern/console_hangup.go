package main

import (
	"os"
	"os/signal"
	"syscall"

	tea "charm.land/bubbletea/v2"
)

// quitOnHangup ends the console p as SIGTERM does, the terminal given
// back as it was found (line mode, echo, the main screen), when SIGHUP
// comes: the terminal hung up, or a program sent it, which would
// otherwise leave the terminal raw and blank. A console started with
// SIGHUP ignored (nohup) keeps ignoring it. The returned function stops
// the watch.
func quitOnHangup(p *tea.Program) (stop func()) {
	if signal.Ignored(syscall.SIGHUP) {
		return func() {}
	}
	hup, done := make(chan os.Signal, 1), make(chan struct{})
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		select {
		case <-hup:
			p.Quit()
		case <-done:
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
	}
}
