package bastion

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// A readKnownHosts is a set of known_hosts files as the bastion read
// them, once each (what is at a path can change between two reads: a
// FIFO put there after a read found a regular file would hold the second
// read, and the connection, for ever), and as x/crypto's knownhosts
// parsed what was read.
type readKnownHosts struct {
	check ssh.HostKeyCallback
	// names are the names knownhosts has for the files, in their order.
	names []string
	// named maps the name knownhosts gives each file (in its keys'
	// Filename, and its errors) to the file's path.
	named map[string]string
}

// parseKnownHosts parses contents, the known_hosts files at paths.
// knownhosts reads files only by their names: it is given each file's
// contents in a file of its own that only this process holds (see
// handOver), by the name of its descriptor.
func parseKnownHosts(paths []string, contents [][]byte) (readKnownHosts, error) {
	names := make([]string, len(paths))
	read := readKnownHosts{names: names, named: map[string]string{}}
	for i, b := range contents {
		f, err := handOver(b)
		if err != nil {
			return read, fmt.Errorf("reading known_hosts: %w", err)
		}
		// Closed once knownhosts has read (or given up on) it.
		defer f.Close()
		names[i] = descriptorName(f)
		read.named[names[i]] = paths[i]
	}
	check, err := knownhosts.New(names...)
	if err != nil {
		msg := err.Error()
		for name, path := range read.named {
			msg = strings.ReplaceAll(msg, name+":", path+":")
		}
		return read, fmt.Errorf("reading known_hosts: %w", renamed{msg, err})
	}
	read.check = check
	return read, nil
}

// pipeHandOver hands b over as a pipe's read end, which a goroutine
// fills; it ends when it has written all of b, or when every reader has
// closed the pipe (EPIPE).
func pipeHandOver(b []byte) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	go func() {
		w.Write(b)
		w.Close()
	}()
	return r, nil
}

// descriptorName is a name that opens f's file again: on Linux a new
// open of it, elsewhere a copy of the descriptor.
func descriptorName(f *os.File) string {
	if runtime.GOOS == "linux" {
		return fmt.Sprintf("/proc/self/fd/%d", f.Fd())
	}
	return fmt.Sprintf("/dev/fd/%d", f.Fd())
}

// path is the known_hosts file knownhosts calls name.
func (r readKnownHosts) path(name string) string {
	if p, ok := r.named[name]; ok {
		return p
	}
	return name
}

// renamed is an error of knownhosts with the files' names in place of
// those of the copies handed over (msg), which is still err to errors.Is
// and errors.As (out of descriptors, say).
type renamed struct {
	msg string
	err error
}

func (r renamed) Error() string { return r.msg }
func (r renamed) Unwrap() error { return r.err }
