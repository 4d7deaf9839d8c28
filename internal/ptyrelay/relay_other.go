//go:build !linux

package ptyrelay

import (
	"os"
	"syscall"
)

// A Relay is never made here: runs are not confined.
type Relay struct{}

// Open returns no relay.
func Open(std [3]*os.File) (*Relay, error) { return nil, nil }

func (r *Relay) Terminal() *os.File                { return nil }
func (r *Relay) Files(std [3]*os.File) [3]*os.File { return std }
func (r *Relay) Start(func())                      {}
func (r *Relay) Pause()                            {}
func (r *Relay) Continue()                         {}
func (r *Relay) Resize()                           {}
func (r *Relay) Close()                            {}
func (r *Relay) Signal(syscall.Signal)             {}
