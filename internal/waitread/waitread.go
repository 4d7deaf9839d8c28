// Package waitread reads a descriptor inherited in blocking mode, such
// as standard input, without a thread blocked in read(2) while nothing
// comes.
//
// Why it matters: a goroutine blocked in read(2) keeps its processor (the
// Go runtime's P) for up to 10 ms before the runtime hands it on. When
// that goroutine was woken by the network poller (it answered a card
// over the control socket, say) and then blocks reading its input again,
// no thread is left waiting in the poller until the runtime's monitor
// looks, up to 10 ms later: a socket that becomes readable meanwhile (the
// next card, on the gateway's stream) waits those milliseconds for
// nothing. Go's own file type waits in the poller only for descriptors
// it may make non-blocking, and it never makes an inherited one so,
// because that flag would change the descriptor for every process that
// shares it (the shell that started the command, say).
//
// A Reader waits for the descriptor instead through an epoll set of its
// own, which is non-blocking and waited on through the runtime's poller
// (as package park waits for idle connections), and reads once the set
// says the descriptor is readable: the read then returns what is there
// at once. The inherited descriptor is left as it was.
//
// Where that cannot be done (other systems; a regular file or
// /dev/null, which epoll refuses and which never make a read wait; a
// descriptor already non-blocking, which Go polls itself), Reader
// returns the file itself.
package waitread

import (
	"io"
	"os"
)

// Reader returns a reader of f that waits for f to become readable in
// the runtime's poller, or f itself (see the package documentation).
// Closing f ends what the reader holds only when the reader is a Closer
// and is closed itself.
func Reader(f *os.File) io.Reader {
	if r, err := newReader(f); err == nil && r != nil {
		return r
	}
	return f
}
