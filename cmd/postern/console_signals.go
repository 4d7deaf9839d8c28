package main

import (
	"os"
	"os/signal"
	"syscall"

	tea "charm.land/bubbletea/v2"
)

// quitSignals end the full-screen console as SIGINT and SIGTERM do
// (Bubble Tea's own), where they would leave the terminal raw and blank:
// SIGHUP (the terminal hung up, or a program sent it), and SIGQUIT and
// SIGABRT, whose default is a stack dump over the card screen.
var quitSignals = []os.Signal{syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGABRT}

// quitOnSignals ends the console p, the terminal given back as it was
// found (line mode, echo, the main screen), when one of quitSignals
// comes. A signal the console was started with ignored (nohup) stays
// ignored. The returned function stops the watch.
func quitOnSignals(p *tea.Program) (stop func()) {
	var watched []os.Signal
	for _, sig := range quitSignals {
		if !signal.Ignored(sig) {
			watched = append(watched, sig)
		}
	}
	if len(watched) == 0 {
		return func() {}
	}
	got, done := make(chan os.Signal, 1), make(chan struct{})
	signal.Notify(got, watched...)
	go func() {
		select {
		case <-got:
			p.Quit()
		case <-done:
		}
	}()
	return func() {
		signal.Stop(got)
		close(done)
	}
}
