package bastion

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	hostnames "github.com/postern/postern/internal/knownhosts"
	"github.com/postern/postern/internal/smallfile"
)

// hostKeyCheck verifies the real host's key against known_hosts files:
// an unknown or changed key is refused with a message that says what to
// do. It also returns the key algorithms known for the host, so that the
// negotiation picks a key known_hosts can verify.
func hostKeyCheck(files []string, t Target, onVerified func(ssh.PublicKey)) (ssh.HostKeyCallback, []string, error) {
	// Each file is read once, through smallfile (a FIFO would hold the
	// read, and the connection, until someone wrote to it; a huge file
	// would cost each connection its size), and what was read is what
	// is checked, for its hosts' keys and its authority lines.
	var existing []string
	var contents [][]byte
	for _, f := range files {
		b, err := smallfile.Read(f, hostnames.MaxFile)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading known_hosts: %w", err)
		}
		existing = append(existing, f)
		contents = append(contents, b)
	}
	if len(existing) == 0 {
		return nil, nil, fmt.Errorf("no known_hosts file to verify %s with (looked in %s); %s", t.Host, strings.Join(files, ", "), learnAdvice(t, files))
	}
	parsed, err := parseKnownHosts(existing, contents)
	if err != nil {
		return nil, nil, err
	}
	kh := parsed.check
	hostport := t.Addr()
	authorities := authorityLines(parsed.names, contents)
	// Ask the callback about a key no host has: the error lists the keys
	// known for this host, and so their algorithms; an authority trusted
	// for the host (its key's type says nothing of the host's) lets the
	// host present a certificate of any kind.
	var algos []string
	var ke *knownhosts.KeyError
	if err := kh(hostport, &net.TCPAddr{}, probeKey); errors.As(err, &ke) {
		for _, k := range ke.Want {
			if authorities.hold(k) {
				algos = append(algos, hostCertAlgos...)
			} else {
				algos = appendAlgos(algos, k.Key.Type())
			}
		}
	}
	sortHostKeyAlgos(algos)
	algos = slices.Compact(algos)
	cb := func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		err := kh(hostname, remote, key)
		var ke *knownhosts.KeyError
		var re *knownhosts.RevokedError
		switch {
		case err == nil:
			onVerified(key)
			return nil
		case errors.As(err, &re):
			return fmt.Errorf("the host key of %s is revoked in known_hosts; refusing", t.Host)
		case errors.As(err, &ke) && !slices.ContainsFunc(ke.Want, func(k knownhosts.KnownKey) bool { return !authorities.hold(k) }):
			return fmt.Errorf("the host key of %s (%s) is not in your known_hosts; %s", t.Host, ssh.FingerprintSHA256(key), learnAdvice(t, files))
		case errors.As(err, &ke):
			file := existing[0]
			if i := slices.IndexFunc(ke.Want, func(k knownhosts.KnownKey) bool { return !authorities.hold(k) }); i >= 0 {
				file = parsed.path(ke.Want[i].Filename)
			}
			return fmt.Errorf("WARNING: the host key of %s changed (now %s); this may be a man-in-the-middle attack; refusing. If the change is expected, fix known_hosts (ssh-keygen -f %s -R %s)", t.Host, ssh.FingerprintSHA256(key), shellWord(file), shellWord(knownhosts.Normalize(hostport)))
		}
		return err
	}
	return cb, algos, nil
}

// learnAdvice tells the person how the bastion comes to know t's key:
// with directSSH, recording it in the first of files, the known_hosts
// files the bastion reads (those that exist) — the person's own, by
// default, which ssh makes when it is not there yet.
func learnAdvice(t Target, files []string) string {
	if len(files) == 0 {
		return "name the known_hosts files to verify hosts with in postern.toml (known_hosts)"
	}
	return "connect once without the bastion (" + directSSH(t, files[0]) + "), check the fingerprint ssh shows, and try again"
}

// directSSH is the ssh command line that reaches t without the bastion,
// whatever the person's ssh configuration says for it (the block of
// "postern ssh-config" sends it through the bastion, and checks its keys
// strictly in a file of the bastion's): it shows the host's key, asks,
// and records it in file, a known_hosts file the bastion reads.
func directSSH(t Target, file string) string {
	cmd := "ssh -o ProxyCommand=none -o UserKnownHostsFile=" + shellWord(file) + " -o StrictHostKeyChecking=ask"
	if t.Port != 22 {
		cmd += " -p " + strconv.Itoa(t.Port)
	}
	return cmd + " -- " + shellWord(t.User+"@"+t.Host)
}

// shellWord quotes s for sh when it holds anything but the characters of
// plain paths and host names.
func shellWord(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("/._-@:+,=", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// authorityLines returns the @cert-authority lines of known_hosts files
// (contents, the files knownhosts calls names), as the knownhosts package
// names the keys it read (their file and line), which it lists among a
// host's keys with nothing to tell them apart.
func authorityLines(names []string, contents [][]byte) authorities {
	lines := authorities{}
	for n, b := range contents {
		i := 0
		for l := range bytes.Lines(b) {
			i++
			if fields := bytes.Fields(l); len(fields) > 0 && string(fields[0]) == "@cert-authority" {
				lines[fileLine{names[n], i}] = true
			}
		}
	}
	return lines
}

// authorities are the known_hosts lines that name a certificate
// authority.
type authorities map[fileLine]bool

type fileLine struct {
	file string
	line int
}

// hold reports whether k was read from an authority's line.
func (a authorities) hold(k knownhosts.KnownKey) bool { return a[fileLine{k.Filename, k.Line}] }

// hostCertAlgos are the host certificates' algorithms, in OpenSSH's
// order.
var hostCertAlgos = slices.DeleteFunc(slices.Clone(hostKeyPreference), func(a string) bool { return !strings.Contains(a, "-cert-") })

// appendAlgos adds the signature algorithms that verify with a key type.
func appendAlgos(algos []string, keyType string) []string {
	switch keyType {
	case ssh.KeyAlgoRSA:
		return append(algos, ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA)
	case ssh.CertAlgoRSAv01:
		return append(algos, ssh.CertAlgoRSASHA512v01, ssh.CertAlgoRSASHA256v01, ssh.CertAlgoRSAv01)
	}
	return append(algos, keyType)
}

// hostKeyPreference is OpenSSH's default HostKeyAlgorithms order, with
// the SHA-1 RSA signatures last.
var hostKeyPreference = []string{
	ssh.CertAlgoED25519v01, ssh.CertAlgoECDSA256v01, ssh.CertAlgoECDSA384v01, ssh.CertAlgoECDSA521v01,
	ssh.CertAlgoSKED25519v01, ssh.CertAlgoSKECDSA256v01, ssh.CertAlgoRSASHA512v01, ssh.CertAlgoRSASHA256v01,
	ssh.KeyAlgoED25519, ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521,
	ssh.KeyAlgoSKED25519, ssh.KeyAlgoSKECDSA256, ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256,
	ssh.CertAlgoRSAv01, ssh.KeyAlgoRSA,
}

// sortHostKeyAlgos orders the algorithms of the keys known for a host as
// OpenSSH does, whatever the order of the known_hosts lines: a host with
// several keys then presents the same one each time, and the retry guard,
// which knows a host by the key its connection verified, is not moved by
// a known_hosts file written in another order.
func sortHostKeyAlgos(algos []string) {
	rank := func(a string) int {
		if i := slices.Index(hostKeyPreference, a); i >= 0 {
			return i
		}
		return len(hostKeyPreference)
	}
	slices.SortStableFunc(algos, func(a, b string) int { return rank(a) - rank(b) })
}

// probeKey is a key no known_hosts line holds.
var probeKey = func() ssh.PublicKey {
	k, _ := ssh.NewPublicKey(ed25519.PublicKey(make([]byte, ed25519.PublicKeySize)))
	if k == nil {
		panic("bastion: cannot build the probe key")
	}
	return k
}()
