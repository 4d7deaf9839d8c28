package bastion

import (
	"sync"

	gossh "golang.org/x/crypto/ssh"
)

// laterRequests reads a session's requests from the client once its
// command has come, whatever the bastion is doing meanwhile (asking the
// decision, dialing, relaying): x/crypto delivers a channel's requests
// through a small queue, and a full one stops the whole connection, whose
// end the bastion would then never see. Until the command is sent, a
// window change is kept for it (the last one) and anything else is
// refused; once it is sent, window changes, signals, breaks and flow
// control go up to the host.
type laterRequests struct {
	done chan struct{} // closed when the client's requests end

	mu    sync.Mutex
	up    gossh.Channel // the command's channel on the host, once sent
	winch []byte        // the last window change before that
}

// readLater starts reading dreqs.
func readLater(dreqs <-chan *gossh.Request) *laterRequests {
	r := &laterRequests{done: make(chan struct{})}
	go r.serve(dreqs)
	return r
}

func (r *laterRequests) serve(dreqs <-chan *gossh.Request) {
	defer close(r.done)
	for req := range dreqs {
		switch req.Type {
		case "window-change", "signal", "break", "xon-xoff":
			if !wellFormed(req.Type, req.Payload) {
				reply(req, false)
				continue
			}
			r.mu.Lock()
			up := r.up
			if up == nil && req.Type == "window-change" {
				r.winch = req.Payload
			}
			r.mu.Unlock()
			if up == nil {
				reply(req, req.Type == "window-change")
				continue
			}
			ok, _ := up.SendRequest(req.Type, req.WantReply, req.Payload)
			reply(req, ok)
		default:
			reply(req, false)
		}
	}
}

// sendTo passes the requests that follow to uch, the command's channel on
// the host, after the last window change that came before.
func (r *laterRequests) sendTo(uch gossh.Channel) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.winch != nil {
		uch.SendRequest("window-change", false, r.winch)
	}
	r.up = uch
}
