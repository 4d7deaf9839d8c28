package api

import (
	"context"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/internal/vault"
)

// VaultListArgs asks for the keys of the vault at Path, which must be
// the gateway's ("" for whichever it keeps).
type VaultListArgs struct {
	Path string `json:"path,omitempty"`
}

// VaultKeys are the keys of a vault: "postern vault list --json" prints
// Keys.
type VaultKeys struct {
	Path string     `json:"path"`
	Keys []VaultKey `json:"keys"`
}

// VaultKey is a key of the vault, with its certificates.
type VaultKey struct {
	Fingerprint  string      `json:"fingerprint"`
	Type         string      `json:"type"`
	Comment      string      `json:"comment"`
	Added        time.Time   `json:"added"`
	Certificates []VaultCert `json:"certificates"`
}

// VaultCert is a certificate kept beside its key.
type VaultCert struct {
	Type        string    `json:"type"`
	KeyID       string    `json:"key_id"`
	Principals  []string  `json:"principals"`
	CA          string    `json:"ca"`
	ValidBefore time.Time `json:"valid_before,omitzero"`
	Expired     bool      `json:"expired"`
}

// ListVault describes the keys of v, an open vault, in the order they
// were added; now decides which certificates have expired.
func ListVault(v *vault.Vault, now time.Time) (*VaultKeys, error) {
	infos, err := v.KeyInfos()
	if err != nil {
		return nil, err
	}
	res := &VaultKeys{Path: v.Path(), Keys: make([]VaultKey, 0, len(infos))}
	for _, k := range infos {
		key := VaultKey{Fingerprint: k.Fingerprint, Type: k.PublicKey.Type(), Comment: k.Comment, Added: k.Added, Certificates: []VaultCert{}}
		for _, c := range k.Certs {
			key.Certificates = append(key.Certificates, vaultCert(c, now))
		}
		res.Keys = append(res.Keys, key)
	}
	return res, nil
}

func vaultCert(c *ssh.Certificate, now time.Time) VaultCert {
	j := VaultCert{Type: c.Type(), KeyID: c.KeyId, Principals: c.ValidPrincipals, CA: ssh.FingerprintSHA256(c.SignatureKey), Expired: vault.CertExpired(c, now)}
	if j.Principals == nil {
		j.Principals = []string{}
	}
	if c.ValidBefore != ssh.CertTimeInfinity && c.ValidBefore < 1<<62 {
		j.ValidBefore = time.Unix(int64(c.ValidBefore), 0).UTC()
	}
	return j
}

// VaultList lists the keys of the gateway's vault, read with the key the
// gateway keeps while it is unlocked: no passphrase. It fails with
// CodeLocked while the vault is locked, CodeNotFound when the gateway
// keeps no vault, or another than path, and CodeDenied for a caller
// inside a run.
func (c *Client) VaultList(ctx context.Context, path string) (*VaultKeys, error) {
	var res VaultKeys
	return &res, c.call(ctx, OpVaultList, VaultListArgs{Path: path}, &res)
}
