// Package fataltest runs a test helper with a test whose Fatalf is
// recorded rather than failing the test, so that a test can check what
// a helper says when it fails.
package fataltest

import (
	"fmt"
	"runtime"
	"testing"
)

// recorder is a test whose Fatalf records the message and ends the
// goroutine that called it, as testing's does.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// Run runs f, in a goroutine of its own, with a test that is t but for
// Fatalf, and returns what f's Fatalf said ("" if it did not call it).
func Run(t testing.TB, f func(testing.TB)) string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.msg
}
