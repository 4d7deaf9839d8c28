package sshagent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/internal/sshpattern"
)

// The ssh-sk-helper protocol (ssh-sk-client.c): one request per helper
// process, framed as u32 length, u8 version, then u32 type, u8 "log on
// stderr", u32 log level and the request; the reply is u32 length, u8
// version, u32 type (0 for an error, with a u32 error code) and the
// reply's fields.
const (
	skHelperVersion = 5
	skHelperError   = 0
	skHelperSign    = 1
)

// An skSigner signs with a FIDO key through OpenSSH's ssh-sk-helper,
// which loads the provider library in its own process. It waits for the
// authenticator (a person touching it) for touchTimeout.
type skSigner struct {
	key          *skKey
	provider     string
	touchTimeout func() time.Duration
}

func (s *skSigner) PublicKey() ssh.PublicKey { return s.key.pub }

func (s *skSigner) Sign(_ io.Reader, data []byte) (*ssh.Signature, error) {
	req := ssh.Marshal(struct {
		Key      []byte
		Provider string
		Data     []byte
		Alg      string
		Compat   uint32
		PIN      string
	}{s.key.wire, s.provider, data, "", 0, ""})
	resp, err := skConverse(skHelperSign, req, time.Now().Add(s.touchTimeout()))
	if err != nil {
		return nil, err
	}
	var m struct {
		Sig  []byte
		Rest []byte `ssh:"rest"`
	}
	if err := ssh.Unmarshal(resp, &m); err != nil || len(m.Rest) != 0 {
		return nil, errors.New("ssh-sk-helper: malformed signature reply")
	}
	sig := new(ssh.Signature)
	if err := ssh.Unmarshal(m.Sig, sig); err != nil {
		return nil, fmt.Errorf("ssh-sk-helper: malformed signature: %w", err)
	}
	if err := s.key.pub.Verify(data, sig); err != nil {
		return nil, fmt.Errorf("ssh-sk-helper: the signature does not verify: %w", err)
	}
	return sig, nil
}

// skConverse runs ssh-sk-helper for one request, waiting for its answer
// until deadline; a helper still waiting then is killed.
func skConverse(typ uint32, req []byte, deadline time.Time) ([]byte, error) {
	h, err := startHelper(helperPath("SSH_SK_HELPER", defaultSKHelper))
	if err != nil {
		return nil, err
	}
	body := []byte{skHelperVersion}
	body = binary.BigEndian.AppendUint32(body, typ)
	body = append(body, 0)                        // log on stderr: no
	body = binary.BigEndian.AppendUint32(body, 0) // log level: quiet
	body = append(body, req...)
	if err := h.send(body); err != nil {
		h.stop()
		return nil, fmt.Errorf("ssh-sk-helper: %w", err)
	}
	resp, rerr := h.recv(deadline)
	if errors.Is(rerr, os.ErrDeadlineExceeded) {
		h.cmd.Process.Kill()
		rerr = errTouchTimeout
	}
	if werr := h.stop(); rerr == nil && werr != nil {
		rerr = werr
	}
	if rerr != nil {
		return nil, fmt.Errorf("ssh-sk-helper: %w", rerr)
	}
	if len(resp) < 5 || resp[0] != skHelperVersion {
		return nil, errors.New("ssh-sk-helper: reply of another protocol version")
	}
	rtype := binary.BigEndian.Uint32(resp[1:])
	resp = resp[5:]
	switch {
	case rtype == skHelperError && len(resp) >= 4:
		return nil, fmt.Errorf("ssh-sk-helper: the authenticator refused (error -%d)", binary.BigEndian.Uint32(resp))
	case rtype != typ:
		return nil, fmt.Errorf("ssh-sk-helper: reply of type %d", rtype)
	}
	return resp, nil
}

// DefaultProviders is OpenSSH's default allow-list for provider libraries
// (ssh-agent -P): the system library directories.
const DefaultProviders = "/usr/lib*/*,/usr/local/lib*/*"

// providerAllowed resolves a provider library's path and matches it
// against the allow-list, a comma-separated list of patterns, as
// ssh-agent matches -P.
func providerAllowed(path, allow string) (string, error) {
	if allow == "" {
		allow = DefaultProviders
	}
	real, err := filepath.EvalSymlinks(path)
	if err == nil {
		real, err = filepath.Abs(real)
	}
	if err != nil {
		return "", fmt.Errorf("provider %q: %w", path, err)
	}
	negated := false
	matched := false
	for _, pat := range strings.Split(allow, ",") {
		neg := strings.HasPrefix(pat, "!")
		pat = strings.TrimPrefix(pat, "!")
		if sshpattern.Match(pat, real) {
			if neg {
				negated = true
			} else {
				matched = true
			}
		}
	}
	if negated || !matched {
		return "", fmt.Errorf("provider %s is not in the allowed list %q", real, allow)
	}
	return real, nil
}
