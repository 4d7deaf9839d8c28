package procid

import (
	"errors"
	"testing"
	"time"

	"github.com/postern/postern/internal/procid/proctest/nofiles"
)

// A process whose exit cannot be watched for want of a descriptor is not
// taken for gone (a run would end as exited): its exit is seen once a
// descriptor is free.
func TestExitedWithoutADescriptorIsNotGone(t *testing.T) {
	_, c := startClient(t, "exit")
	p, err := Host.PeerOf(c)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	restore := nofiles.Exhaust(t)
	exited := p.Exited()
	select {
	case <-exited:
		restore()
		t.Fatal("a live peer whose exit could not be watched for want of a descriptor was taken for exited")
	default:
	}
	restore()
	c.Write([]byte{1})
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the exit of the peer was not seen once descriptors were free")
	}
}

// A peer the process had no descriptor to identify with is neither gone
// nor changed: the error says ErrNoResources.
func TestCheckWithoutADescriptorIsNoResources(t *testing.T) {
	_, c := startClient(t, "exit")
	restore := nofiles.Exhaust(t)
	_, err := Host.PeerOf(c)
	restore()
	if !errors.Is(err, ErrNoResources) || errors.Is(err, ErrGone) || errors.Is(err, ErrChanged) {
		t.Fatalf("identifying a peer without a free descriptor: %v, want an error wrapping ErrNoResources alone", err)
	}
}

// A walk up a process's ancestry that could not read a parent for want
// of a descriptor says so, not that the process left while it was read
// (which a request through a run's socket was refused for as
// process_exited).
func TestAncestryWithoutADescriptorIsNoResources(t *testing.T) {
	_, c := startClient(t, "exit")
	p, err := Host.PeerOf(c)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, c2 := startClient(t, "exit")
	other, err := Host.PeerOf(c2)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	restore := nofiles.Exhaust(t)
	_, err = p.Within(other)
	restore()
	if !errors.Is(err, ErrNoResources) {
		t.Fatalf("walking the ancestry without a free descriptor: %v, want an error wrapping ErrNoResources", err)
	}
}
