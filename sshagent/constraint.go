package sshagent

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/internal/sshpattern"
)

// ExtRestrictDestination is the key constraint ssh-add -h sends.
const ExtRestrictDestination = "restrict-destination-v00@openssh.com"

// A Hop is one end of a destination constraint: a host name (for people)
// and the host keys (or certificate authorities) that identify it.
type Hop struct {
	User     string // only on the "to" side: a pattern for the account
	Hostname string
	Keys     []HopKey
}

// A HopKey is a host key, or a CA whose certificates identify the host.
type HopKey struct {
	Key  ssh.PublicKey
	IsCA bool
}

// A DestConstraint permits a key to be used from one hop to the next, as
// in ssh-add -h "from>to". From is empty for the first hop (the local
// machine).
type DestConstraint struct {
	From, To Hop
}

// parseDestConstraints parses the details of a
// restrict-destination-v00@openssh.com constraint: a sequence of
// constraints, each a string holding the from hop, the to hop and a
// reserved string. See [PROTOCOL.agent], section 2.
func parseDestConstraints(details []byte) ([]DestConstraint, error) {
	var out []DestConstraint
	for len(details) > 0 {
		var outer struct {
			C    []byte
			Rest []byte `ssh:"rest"`
		}
		if err := ssh.Unmarshal(details, &outer); err != nil {
			return nil, fmt.Errorf("destination constraint: %w", err)
		}
		details = outer.Rest
		var c struct {
			From, To, Reserved []byte
		}
		if err := ssh.Unmarshal(outer.C, &c); err != nil {
			return nil, fmt.Errorf("destination constraint: %w", err)
		}
		if len(c.Reserved) != 0 {
			return nil, errors.New("destination constraint: unsupported extensions")
		}
		var dc DestConstraint
		var err error
		if dc.From, err = parseHop(c.From); err != nil {
			return nil, err
		}
		if dc.To, err = parseHop(c.To); err != nil {
			return nil, err
		}
		switch {
		case dc.From.User != "":
			return nil, errors.New("destination constraint: a user on the from hop is not supported")
		case dc.From.Hostname == "" && len(dc.From.Keys) != 0:
			return nil, errors.New("destination constraint: from hop has keys but no host name")
		case dc.From.Hostname != "" && len(dc.From.Keys) == 0:
			return nil, errors.New("destination constraint: from hop has a host name but no keys")
		case dc.To.Hostname == "" || len(dc.To.Keys) == 0:
			return nil, errors.New("destination constraint: incomplete to hop")
		}
		out = append(out, dc)
		if len(out) > 1024 {
			return nil, errors.New("destination constraint: too many hops")
		}
	}
	if len(out) == 0 {
		return nil, errors.New("destination constraint: empty")
	}
	return out, nil
}

func parseHop(b []byte) (Hop, error) {
	var h struct {
		User, Hostname string
		Reserved       []byte
		Rest           []byte `ssh:"rest"`
	}
	if err := ssh.Unmarshal(b, &h); err != nil {
		return Hop{}, fmt.Errorf("destination constraint hop: %w", err)
	}
	switch {
	case len(h.Reserved) != 0:
		return Hop{}, errors.New("destination constraint hop: unsupported extensions")
	case len(h.User) > maxUserPatternBytes:
		// OpenSSH 10 caps user match patterns; a longer one is refused.
		return Hop{}, fmt.Errorf("destination constraint hop: user pattern of %d bytes (limit %d)", len(h.User), maxUserPatternBytes)
	}
	hop := Hop{User: h.User, Hostname: h.Hostname}
	rest := h.Rest
	for len(rest) > 0 {
		var k struct {
			Blob []byte
			IsCA bool
			Rest []byte `ssh:"rest"`
		}
		if err := ssh.Unmarshal(rest, &k); err != nil {
			return Hop{}, fmt.Errorf("destination constraint key: %w", err)
		}
		// A copy: the key, kept for the gateway's life (kept.go), would
		// otherwise keep the whole request it came in.
		key, err := ssh.ParsePublicKey(bytes.Clone(k.Blob))
		if err != nil {
			return Hop{}, fmt.Errorf("destination constraint key: %w", err)
		}
		hop.Keys = append(hop.Keys, HopKey{Key: key, IsCA: k.IsCA})
		rest = k.Rest
	}
	return hop, nil
}

// matches reports whether key identifies hop: it is one of the hop's keys,
// or a host certificate signed by one of its CAs for the hop's name, as
// OpenSSH's agent matches them: a principal is a pattern the name
// matches (ssh-keygen -h -n '*.example.com'), and the CA's signature is
// made with an algorithm it allows (not SHA-1's ssh-rsa).
func (h *Hop) matches(key ssh.PublicKey) bool {
	if key == nil {
		return false
	}
	for _, hk := range h.Keys {
		if !hk.IsCA {
			if bytes.Equal(hk.Key.Marshal(), key.Marshal()) {
				return true
			}
			continue
		}
		cert, ok := key.(*ssh.Certificate)
		if !ok || cert.CertType != ssh.HostCert || cert.Signature == nil || !slices.Contains(caSignatureAlgorithms, cert.Signature.Format) ||
			!bytes.Equal(cert.SignatureKey.Marshal(), hk.Key.Marshal()) {
			continue
		}
		// The checker takes a principal as a name: it is given the
		// principal the hop's name matches, if one does.
		i := slices.IndexFunc(cert.ValidPrincipals, func(p string) bool { return sshpattern.Match(p, h.Hostname) })
		if i < 0 {
			continue
		}
		checker := ssh.CertChecker{}
		if err := checker.CheckCert(cert.ValidPrincipals[i], cert); err == nil {
			return true
		}
	}
	return false
}

// caSignatureAlgorithms are the algorithms of a CA's signature on a host
// certificate that OpenSSH's agent accepts for a destination constraint
// (SSH_ALLOWED_CA_SIGALGS).
var caSignatureAlgorithms = []string{
	ssh.KeyAlgoED25519, ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521,
	ssh.KeyAlgoSKED25519, ssh.KeyAlgoSKECDSA256, ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256,
}

// permits finds a constraint that allows the hop from -> to (from nil for
// the first hop) for user (nil when not signing; an empty name is a name).
func permits(cs []DestConstraint, from, to ssh.PublicKey, user *string) bool {
	for i := range cs {
		c := &cs[i]
		if from == nil {
			if c.From.Hostname != "" || len(c.From.Keys) != 0 {
				continue
			}
		} else if !c.From.matches(from) {
			continue
		}
		if to != nil && !c.To.matches(to) {
			continue
		}
		if user != nil && c.To.User != "" {
			if !sshpattern.Match(c.To.User, *user) {
				continue
			}
		}
		return true
	}
	return false
}

// permitted applies ssh-agent's rules for a destination-constrained key on
// a connection with the given bindings: every hop recorded by
// session-bind must be allowed by a constraint; only the last hop may be
// used to authenticate (user set, though to an empty name); earlier hops
// must be forwarding ones. With user nil (listing keys), a connection
// whose last hop forwards only shows keys that may be used beyond that
// hop.
func permitted(cs []DestConstraint, bs []Binding, user *string) error {
	if len(cs) == 0 || len(bs) == 0 {
		return nil
	}
	for i := range bs {
		var from ssh.PublicKey
		if i > 0 {
			from = bs[i-1].HostKey
		}
		var testUser *string
		if i == len(bs)-1 {
			testUser = user
			if bs[i].Forwarding && user != nil {
				return errors.New("tried to sign on a forwarding hop")
			}
		} else if !bs[i].Forwarding {
			return errors.New("tried to forward through a signing bind")
		}
		if !permits(cs, from, bs[i].HostKey, testUser) {
			return fmt.Errorf("hop %d to %s is not permitted by the key's destination constraints", i+1, ssh.FingerprintSHA256(bs[i].HostKey))
		}
	}
	last := bs[len(bs)-1]
	if last.Forwarding && user == nil && !permits(cs, last.HostKey, nil, nil) {
		return errors.New("key permitted at the host but not beyond it")
	}
	return nil
}
