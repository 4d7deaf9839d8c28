package sshagent

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/internal/safetext"
)

// Message numbers of the agent protocol ([PROTOCOL.agent] and
// draft-ietf-sshm-ssh-agent).
const (
	msgFailure                    = 5
	msgSuccess                    = 6
	msgRemoveAllRSAIdentities     = 9 // SSH protocol 1; OpenSSH treats it as 19
	msgRequestIdentities          = 11
	msgIdentitiesAnswer           = 12
	msgSignRequest                = 13
	msgSignResponse               = 14
	msgAddIdentity                = 17
	msgRemoveIdentity             = 18
	msgRemoveAllIdentities        = 19
	msgAddSmartcardKey            = 20
	msgRemoveSmartcardKey         = 21
	msgLock                       = 22
	msgUnlock                     = 23
	msgAddIDConstrained           = 25
	msgAddSmartcardKeyConstrained = 26
	msgExtension                  = 27
	msgExtensionFailure           = 28
	msgExtensionResponse          = 29
)

// Key constraints of ADD_ID_CONSTRAINED and ADD_SMARTCARD_KEY_CONSTRAINED.
const (
	constrainLifetime  = 1
	constrainConfirm   = 2
	constrainMaxSign   = 3 // XMSS only: refused
	constrainExtension = 255
)

// Constraint extensions this agent knows.
const (
	ExtSKProvider       = "sk-provider@openssh.com"
	ExtAssociatedCerts  = "associated-certs-v00@openssh.com"
	maxAssociatedCerts  = 1024
	maxUserPatternBytes = 256 // OpenSSH 10's AGENT_USER_CONSTRAINT_MAX_LEN
)

// Signature flags of SIGN_REQUEST.
const (
	flagRSASHA256 = 2
	flagRSASHA512 = 4
)

// Wire forms of requests, parsed with ssh.Unmarshal.
type (
	signRequestMsg struct {
		KeyBlob []byte
		Data    []byte
		Flags   uint32
	}
	keyBlobMsg struct {
		KeyBlob []byte
	}
	// Pass is the request's own bytes, which are cleared once used.
	passphraseMsg struct {
		Pass []byte
	}
	extensionMsg struct {
		Name     string
		Contents []byte `ssh:"rest"`
	}
	// PIN is the request's own bytes, which are cleared once used.
	smartcardMsg struct {
		Provider    string
		PIN         []byte
		Constraints []byte `ssh:"rest"`
	}
)

// reply builds a reply message: the length, the type and the payload.
func reply(typ byte, payload ...[]byte) []byte {
	n := 1
	for _, p := range payload {
		n += len(p)
	}
	out := make([]byte, 4, 4+n)
	binary.BigEndian.PutUint32(out, uint32(n))
	out = append(out, typ)
	for _, p := range payload {
		out = append(out, p...)
	}
	return out
}

var (
	replyFailure          = reply(msgFailure)
	replySuccess          = reply(msgSuccess)
	replyExtensionFailure = reply(msgExtensionFailure)
)

func status(ok bool) []byte {
	if ok {
		return replySuccess
	}
	return replyFailure
}

// identitiesAnswer encodes IDENTITIES_ANSWER.
func identitiesAnswer(ids []*Identity) []byte {
	var body []byte
	body = binary.BigEndian.AppendUint32(body, uint32(len(ids)))
	for _, id := range ids {
		body = append(body, ssh.Marshal(struct {
			Blob    []byte
			Comment string
		}{id.Blob(), listedComment(id.Comment)})...)
	}
	return reply(msgIdentitiesAnswer, body)
}

// listedComment is a key's comment as a listing carries it. ssh-add -l
// and -L print it to the person's terminal as it comes, and a client
// chose it (a run, through its socket): one holding a character that
// safetext escapes (an escape sequence, a bidirectional override) is
// listed escaped, every other as it was added.
func listedComment(c string) string {
	plain := true
	for i := 0; i < len(c); i++ {
		if c[i] < 0x20 || c[i] >= 0x7f {
			plain = false
			break
		}
	}
	if plain || safetext.Terminal(c) == c {
		return c
	}
	return safetext.Escape(c)
}

// A keyConstraints is what ADD_ID_CONSTRAINED and
// ADD_SMARTCARD_KEY_CONSTRAINED attach to keys.
type keyConstraints struct {
	lifetime    uint32 // seconds, 0 for none
	confirm     bool
	skProvider  string
	dest        []DestConstraint
	hasDest     bool
	certs       []*ssh.Certificate // associated-certs-v00@openssh.com
	certOnly    bool
	hasCertsExt bool
}

// parseAddTail parses what follows the key in an add request: the
// comment and, in a constrained add, the constraints; an unconstrained
// add has nothing after its comment.
func parseAddTail(rest []byte, constrained bool) (comment string, cons *keyConstraints, err error) {
	var tail struct {
		Comment     string
		Constraints []byte `ssh:"rest"`
	}
	if err := ssh.Unmarshal(rest, &tail); err != nil {
		return "", nil, err
	}
	switch {
	case constrained:
		cons, err = parseConstraints(tail.Constraints)
	case len(tail.Constraints) != 0:
		err = errTrailing
	default:
		cons = &keyConstraints{}
	}
	return tail.Comment, cons, err
}

// parseConstraints parses the constraints that follow a key, refusing an
// unknown or repeated one, as ssh-agent does.
func parseConstraints(b []byte) (*keyConstraints, error) {
	c := &keyConstraints{}
	for len(b) > 0 {
		typ := b[0]
		b = b[1:]
		switch typ {
		case constrainLifetime:
			if c.lifetime != 0 || len(b) < 4 {
				return nil, errors.New("lifetime constraint repeated or truncated")
			}
			c.lifetime = binary.BigEndian.Uint32(b)
			b = b[4:]
			if c.lifetime == 0 {
				return nil, errors.New("lifetime constraint of 0 seconds")
			}
		case constrainConfirm:
			if c.confirm {
				return nil, errors.New("confirm constraint repeated")
			}
			c.confirm = true
		case constrainExtension:
			var ext struct {
				Name string
				Rest []byte `ssh:"rest"`
			}
			if err := ssh.Unmarshal(b, &ext); err != nil {
				return nil, fmt.Errorf("constraint extension: %w", err)
			}
			rest, err := c.parseExtension(ext.Name, ext.Rest)
			if err != nil {
				return nil, err
			}
			b = rest
		default:
			return nil, fmt.Errorf("unknown key constraint %d", typ)
		}
	}
	return c, nil
}

func (c *keyConstraints) parseExtension(name string, b []byte) ([]byte, error) {
	type strRest struct {
		S    []byte
		Rest []byte `ssh:"rest"`
	}
	switch name {
	case ExtSKProvider:
		var m strRest
		if c.skProvider != "" || ssh.Unmarshal(b, &m) != nil || len(m.S) == 0 {
			return nil, errors.New("sk-provider constraint repeated or malformed")
		}
		c.skProvider = string(m.S)
		return m.Rest, nil
	case ExtRestrictDestination:
		var m strRest
		if c.hasDest || ssh.Unmarshal(b, &m) != nil {
			return nil, errors.New("destination constraint repeated or malformed")
		}
		dest, err := parseDestConstraints(m.S)
		if err != nil {
			return nil, err
		}
		c.dest, c.hasDest = dest, true
		return m.Rest, nil
	case ExtAssociatedCerts:
		var m struct {
			CertOnly bool
			Certs    []byte
			Rest     []byte `ssh:"rest"`
		}
		if c.hasCertsExt || ssh.Unmarshal(b, &m) != nil {
			return nil, errors.New("associated certificates repeated or malformed")
		}
		c.hasCertsExt, c.certOnly = true, m.CertOnly
		n := 0
		for certs := m.Certs; len(certs) > 0; {
			var k strRest
			if err := ssh.Unmarshal(certs, &k); err != nil {
				return nil, fmt.Errorf("associated certificate: %w", err)
			}
			certs = k.Rest
			pub, err := ssh.ParsePublicKey(k.S)
			if err != nil {
				return nil, fmt.Errorf("associated certificate: %w", err)
			}
			if n++; n > maxAssociatedCerts {
				return nil, errors.New("too many associated certificates")
			}
			// A plain key among them is passed over, as OpenSSH 10 does
			// (ssh-add -s PROVIDER FILE... sends every file it is given).
			if cert, ok := pub.(*ssh.Certificate); ok {
				c.certs = append(c.certs, cert)
			}
		}
		return m.Rest, nil
	}
	return nil, fmt.Errorf("unsupported constraint %q", name)
}
