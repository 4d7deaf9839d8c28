package approvals

import (
	"fmt"
	"strings"

	"github.com/postern/postern/internal/procid"
)

// A Description is what a person is shown about a request, truth first:
// what the gateway verified itself, then what the client claims.
type Description struct {
	Key         string   // "id_ed25519 (SHA256:…)"
	KeyFP       string   // SHA256 fingerprint
	Chain       string   // "ssh (4121) ← git ← bash ← claude (3988)"
	Exe         string   // path of the requester's executable
	ExeHash     string   // SHA-256 prefix
	Dest        string   // "host key SHA256:… (github.com)" or ""
	DestFP      string   // verified host key fingerprint
	DestNames   []string // names known_hosts gives the verified key
	Forwarding  bool
	User        string // account named in the userauth request (a claim)
	Namespace   string // SSHSIG namespace
	Purpose     Purpose
	Unsupported string // why the destination is unknown, if it is
}

func (e *Engine) describe(r *Request, p *Policy) *Description {
	d := &Description{
		KeyFP:     r.Key.Fingerprint,
		Key:       r.Key.Fingerprint,
		Purpose:   r.Purpose,
		Namespace: r.Namespace,
	}
	if r.Key.Comment != "" {
		d.Key = r.Key.Comment + " (" + r.Key.Fingerprint + ")"
	}
	if rq := r.Requester; rq != nil {
		chain := append(procid.Chain{rq.Process}, e.Procs.Ancestors(&rq.Process)...)
		d.Chain = chain.String()
		d.Exe = rq.Exe.Path
		if h := rq.Exe.Hash(); len(h) >= 12 {
			d.ExeHash = h[:12]
		}
	}
	if r.Dest != nil {
		d.DestFP = r.Dest.Fingerprint()
		d.User = r.Dest.User
		d.Forwarding = r.Dest.Forwarding
		if p.Hosts != nil {
			d.DestNames = p.Hosts.Lookup(r.Dest.HostKey, nil).Names
		}
		d.Dest = "host key " + d.DestFP
		if len(d.DestNames) > 0 {
			d.Dest += " (" + strings.Join(d.DestNames, ", ") + ")"
		} else {
			d.Dest += " (not in known_hosts)"
		}
	}
	return d
}

// Prompt renders the description for an SSH_ASKPASS confirmation dialog,
// starting with ssh-agent's own question.
func (d *Description) Prompt() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Allow use of key %s?\n", d.Key)
	if d.Chain != "" {
		fmt.Fprintf(&b, "Requested by: %s\n", d.Chain)
		fmt.Fprintf(&b, "Executable: %s (sha256 %s)\n", d.Exe, d.ExeHash)
	}
	switch {
	case d.Dest != "":
		fmt.Fprintf(&b, "Destination: %s, verified by session-bind\n", d.Dest)
		if d.Forwarding {
			b.WriteString("Warning: the request comes through a forwarded agent connection\n")
		}
		if d.User != "" {
			fmt.Fprintf(&b, "Account (claimed by the client): %s\n", d.User)
		}
	case d.Purpose == PurposeSSHSig:
		fmt.Fprintf(&b, "Purpose: signature in namespace %q (no destination)\n", d.Namespace)
	default:
		b.WriteString("Destination: unknown (the client did not bind the connection to a host)\n")
	}
	return strings.TrimRight(b.String(), "\n")
}
