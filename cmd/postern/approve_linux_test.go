package main

import (
	"bufio"
	"testing"
	"time"

	"github.com/postern/postern/internal/ptyrelay"
)

// The line console asks about a card only once no line has been typed on
// the terminal for armDelay: a program typing answers into the terminal
// without a pause is never asked, and what it typed is discarded.
func TestLineConsoleSettlesBeforeAsking(t *testing.T) {
	master, tty, err := ptyrelay.OpenPair()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer tty.Close()
	go func() {
		// What the terminal echoes is not read: drop it.
		buf := make([]byte, 4096)
		for {
			if _, err := master.Read(buf); err != nil {
				return
			}
		}
	}()
	typing := 3 * armDelay
	stop := time.Now().Add(typing)
	go func() {
		for time.Now().Before(stop) {
			master.Write([]byte("o\n"))
			time.Sleep(armDelay / 10)
		}
	}()
	start := time.Now()
	settle(tty, bufio.NewReader(tty))
	if took := time.Since(start); time.Now().Before(stop.Add(armDelay)) {
		t.Fatalf("the console asked after %v, while a program typed answers for %v without a pause", took.Round(time.Millisecond), typing)
	}
	if n := pendingInput(tty); n != 0 {
		t.Fatalf("%d bytes the program typed are left to answer the card", n)
	}
}
