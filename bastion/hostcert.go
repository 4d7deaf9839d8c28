package bastion

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/internal/atomicfile"
	"github.com/postern/postern/internal/smallfile"
	"github.com/postern/postern/internal/xdg"
)

// Identity is what the bastion presents to local ssh clients: a host key,
// and a certificate authority that signs, per connection, a short-lived
// host certificate for the name the client asked for. Clients trust the
// CA with one "@cert-authority" line in a known_hosts file postern manages.
type Identity struct {
	CA      ssh.Signer
	HostKey ssh.Signer
}

// LoadIdentity reads the CA and host keys from dir, creating them (mode
// 0600) the first time.
func LoadIdentity(dir string) (*Identity, error) {
	ca, err := loadOrCreateKey(filepath.Join(dir, xdg.BastionCAFile))
	if err != nil {
		return nil, err
	}
	hk, err := loadOrCreateKey(filepath.Join(dir, xdg.BastionHostKeyFile))
	if err != nil {
		return nil, err
	}
	return &Identity{CA: ca, HostKey: hk}, nil
}

func loadOrCreateKey(path string) (ssh.Signer, error) {
	b, err := smallfile.Read(path, 64<<10)
	if errors.Is(err, fs.ErrNotExist) {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, err
		}
		blk, err := ssh.MarshalPrivateKey(priv, "postern bastion")
		if err != nil {
			return nil, err
		}
		b = pem.EncodeToMemory(blk)
		if err := atomicfile.Write(path, b, 0o600); err != nil {
			return nil, fmt.Errorf("saving %s: %w", path, err)
		}
	} else if err != nil {
		return nil, err
	}
	s, err := ssh.ParsePrivateKey(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (move it aside to create a new one)", path, err)
	}
	return s, nil
}

// KnownHostsLine is the line that makes ssh trust the bastion's
// certificates for every host name.
func (id *Identity) KnownHostsLine() string {
	return "@cert-authority * " + string(ssh.MarshalAuthorizedKey(id.CA.PublicKey()))
}

// hostSigner returns a signer presenting a host certificate for name,
// valid for a few minutes around now.
func (id *Identity) hostSigner(name string, now time.Time) (ssh.Signer, error) {
	cert := &ssh.Certificate{
		Key:             id.HostKey.PublicKey(),
		CertType:        ssh.HostCert,
		KeyId:           "postern bastion for " + name,
		ValidPrincipals: []string{name},
		ValidAfter:      uint64(now.Add(-5 * time.Minute).Unix()),
		ValidBefore:     uint64(now.Add(time.Hour).Unix()),
	}
	if err := cert.SignCert(rand.Reader, id.CA); err != nil {
		return nil, err
	}
	return ssh.NewCertSigner(cert, id.HostKey)
}
