package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/safetext"
	"github.com/postern/postern/internal/smallfile"
	"github.com/postern/postern/internal/vault"
	"github.com/postern/postern/internal/xdg"
)

const vaultUsage = `Usage: postern vault init [--passphrase-file FILE]
       postern vault add [--comment TEXT] [--passphrase-file FILE] [--socket PATH] KEYFILE|CERTFILE...
       postern vault list [--json] [--offline] [--passphrase-file FILE]
       postern vault remove [--passphrase-file FILE] [--socket PATH] FINGERPRINT|COMMENT
       postern vault passwd [--passphrase-file FILE] [--new-passphrase-file FILE] [--socket PATH]

Manage the encrypted vault of private keys in $XDG_STATE_HOME/postern/vault.
add, remove and passwd go through the gateway that answers at
$SSH_AUTH_SOCK (or --socket) when it keeps this vault: it makes the
change, records it in the audit log and takes it in at once. With no
gateway running, or one that keeps another vault, the command makes the
change and records it in the audit log itself. list asks the gateway
whose vault it is, without a passphrase, while that gateway has it
unlocked (outside a run); otherwise, with --offline or with --passphrase-file (whose
passphrase it then checks), it opens the file itself.
`

// envKDFTarget sets how long one key derivation should take when a vault
// is created or its passphrase changed (a Go duration such as "1s"). The
// parameters never go below Argon2id t=3, m=64 MiB, p=4, whatever it says.
const envKDFTarget = "POSTERN_KDF_TARGET"

func cmdVault(args []string, out, errw io.Writer) error {
	if len(args) == 0 {
		return usagef("vault: missing subcommand (init, add, list, remove or passwd)")
	}
	sub := map[string]command{
		"init":   vaultInit,
		"add":    vaultAdd,
		"list":   vaultList,
		"remove": vaultRemove,
		"passwd": vaultPasswd,
	}[args[0]]
	if sub == nil {
		if args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
			return &helpRequest{vaultUsage}
		}
		return usagef("vault: unknown subcommand %q", args[0])
	}
	return sub(args[1:], out, errw)
}

func vaultPath() (string, error) {
	p, err := xdg.StateFile(xdg.VaultFile)
	if err != nil {
		return "", err
	}
	return p, xdg.EnsureDir(filepath.Dir(p))
}

func kdfParams() (vault.Params, error) {
	target := time.Second / 2
	if s := os.Getenv(envKDFTarget); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			return vault.Params{}, fmt.Errorf("$%s: %w", envKDFTarget, err)
		}
		target = d
	}
	return vault.Calibrate(target), nil
}

// existingVault returns the vault's path, or an error when there is no
// vault there.
func existingVault() (string, error) {
	path, err := vaultPath()
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("no vault at %s: %w", path, vault.ErrNotExist)
	}
	return path, nil
}

// openVault asks for the passphrase and opens the vault, pausing after a
// wrong passphrase as the gateway does.
func openVault(file string) (*vault.Vault, error) { return openVaultAt("", file) }

// openVaultAt is openVault for the vault at path ("": this state
// directory's).
func openVaultAt(path, file string) (*vault.Vault, error) {
	if path == "" {
		var err error
		if path, err = existingVault(); err != nil {
			return nil, err
		}
	}
	pass, err := readPassphrase(file, "Enter passphrase for the postern vault: ")
	if err != nil {
		return nil, err
	}
	defer clear(pass)
	v, err := vault.Open(path, pass)
	if errors.Is(err, vault.ErrWrongPassphrase) {
		time.Sleep(vault.WrongPassphraseDelay(1))
	}
	return v, err
}

func vaultInit(args []string, out, errw io.Writer) error {
	fs := newFlags("vault init", vaultUsage)
	pfile := passphraseFileFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := noOperands(fs)(); err != nil {
		return err
	}
	p, err := kdfParams()
	if err != nil {
		return err
	}
	v, err := api.InitVault(p, func() ([]byte, error) {
		return readNewPassphrase(*pfile, "Enter a passphrase for the new vault: ")
	})
	if v == nil {
		return err
	}
	// Created, also when err says that a power loss may undo it: the
	// audit log's key is said either way.
	fmt.Fprintf(out, "created %s (%s)\n", v.Path, p)
	fmt.Fprintf(out, "audit log key: %s\n", v.AuditPin)
	fmt.Fprintln(out, "keep that line somewhere else: \"postern audit verify --pin KEY\" proves the log is this one")
	if err != nil {
		return err
	}
	tellRunningGateway(out)
	return nil
}

// tellRunningGateway says what a gateway that runs already made of the
// new vault: it locks (keys added with ssh-add stay, usable again once
// unlocked) and starts its audit log.
func tellRunningGateway(out io.Writer) {
	sock, _, err := api.Locate(os.Getenv("SSH_AUTH_SOCK"))
	if err != nil {
		return
	}
	c := api.NewClient(sock)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var st *api.Status
	for ctx.Err() == nil {
		if st, err = c.Status(ctx); err != nil {
			return
		}
		if st.Vault.State != api.VaultNone {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st == nil || st.Vault.State == api.VaultNone {
		return
	}
	fmt.Fprintf(out, "the running agent (pid %d) uses the new vault: it is locked until \"postern unlock\"; keys added with ssh-add are kept, usable again once unlocked\n", st.PID)
	if st.Audit.Enabled {
		fmt.Fprintf(out, "the running agent records to the audit log %s from now on\n", st.Audit.Path)
	} else {
		fmt.Fprintln(out, "the running agent did not start the audit log: restart it to start the log")
	}
}

func vaultAdd(args []string, out, errw io.Writer) error {
	fs := newFlags("vault add", vaultUsage)
	comment := fs.String("comment", "", "comment for the key (default: the file's own, else its name)")
	pfile := passphraseFileFlag(fs)
	sock := socketFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usagef("vault add: name at least one private key or certificate file")
	}
	if *comment != "" && fs.NArg() > 1 {
		return usagef("vault add: --comment applies to one file only")
	}
	// The files first: one that is not there, or not a key, is said
	// before the vault's passphrase is asked for.
	c := &api.VaultChange{}
	defer c.Wipe()
	for _, file := range fs.Args() {
		if err := readKeyOrCert(c, file, *comment, errw); err != nil {
			return err
		}
	}
	change, err := vaultChanger(*sock)
	if err != nil {
		return err
	}
	if c.Passphrase, err = readPassphrase(*pfile, "Enter passphrase for the postern vault: "); err != nil {
		return err
	}
	res, err := change(c)
	if err != nil {
		return err
	}
	for _, k := range res.Added {
		fmt.Fprintf(out, "added %s %s\n", k.Fingerprint, shown(k.Comment))
	}
	for _, ct := range res.Certificates {
		fmt.Fprintf(out, "added certificate %s (%s) to %s %s\n", safetext.Quote(ct.KeyID, safetext.Name), ct.Type, ct.Fingerprint, shown(ct.Comment))
	}
	return nil
}

// readKeyOrCert adds the private key or certificate in file to c; a
// certificate beside a key (KEYFILE-cert.pub) goes with it, as ssh-add
// does, unless it has expired: the vault refuses an expired certificate,
// and the key goes in without it, with a warning on errw.
func readKeyOrCert(c *api.VaultChange, file, comment string, errw io.Writer) error {
	if err := holdSecrets(); err != nil {
		return err
	}
	data, err := smallfile.Read(file, maxKeyFile)
	if err != nil {
		return err
	}
	if cert, ok := parseCertFile(data); ok {
		c.AddCertificates = append(c.AddCertificates, cert.Marshal())
		return nil
	}
	if _, _, _, _, err := ssh.ParseAuthorizedKey(data); err == nil {
		hint := "give the private key file, which ssh-keygen writes beside the public one"
		if priv, ok := strings.CutSuffix(file, ".pub"); ok {
			hint = "give the private key file: postern vault add " + priv
		}
		return withHint(fmt.Errorf("%s: a public key: the vault keeps private keys, and certificates for them", file), hint)
	}
	k, err := readKeyFile(file, data, comment)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	c.Add = append(c.Add, k)
	data, err = smallfile.Read(file+"-cert.pub", maxKeyFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	default:
		cert, ok := parseCertFile(data)
		switch {
		case !ok:
			return fmt.Errorf("%s-cert.pub: not an OpenSSH certificate", file)
		case vault.CertExpired(cert, time.Now()):
			warningf(errw, "%s-cert.pub: the certificate %s expired on %s: not added (a valid one can be added with postern vault add)",
				file, safetext.Quote(cert.KeyId, safetext.Name), time.Unix(int64(cert.ValidBefore), 0).UTC().Format(time.RFC3339))
		default:
			c.AddCertificates = append(c.AddCertificates, cert.Marshal())
		}
	}
	return nil
}

// parseCertFile reads an OpenSSH certificate file (KEY-cert.pub).
func parseCertFile(data []byte) (*ssh.Certificate, bool) {
	pub, _, _, _, err := ssh.ParseAuthorizedKey(data)
	if err != nil {
		return nil, false
	}
	c, ok := pub.(*ssh.Certificate)
	return c, ok
}

// maxKeyFile bounds a private key or certificate file.
const maxKeyFile = 1 << 20

// readKeyFile reads the private key file's data, asking for its
// passphrase when it is encrypted, as a key for the vault. Without a
// comment, the file's own is kept, else its name. The key's passphrase is
// asked for, never read from the vault's passphrase file.
func readKeyFile(file string, data []byte, comment string) (vault.Key, error) {
	defer clear(data)
	priv, c, err := vault.ParsePrivateKeyFile(data, func() ([]byte, error) {
		p, err := askPassphrase("Enter passphrase for " + file + ": ")
		if errors.Is(err, errCannotAsk) {
			return nil, withHint(errors.New("the private key is encrypted, and no terminal or askpass program can ask for its passphrase"), "add it from a terminal, or decrypt a copy first (ssh-keygen -p)")
		}
		return p, err
	})
	if err != nil {
		return vault.Key{}, err
	}
	switch {
	case comment != "":
		c = comment
	case c == "":
		c = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	return vault.NewKey(priv, c)
}

// vaultChanger returns what makes a change to the vault of this
// command's state directory: the running gateway whose vault it is,
// which records it in its audit log, or, with no such gateway answering
// (none, or one that keeps the vault of another state directory), this
// command, which records it itself once it found the vault there: a
// missing vault is said before a passphrase is asked for. The change's
// secrets are wiped either way.
func vaultChanger(sock string) (func(*api.VaultChange) (*api.VaultChanged, error), error) {
	path, err := vaultPath()
	if err != nil {
		return nil, err
	}
	gw, st := answeringGateway(sock)
	if gw != nil && st.Vault.Path != path && !api.SameFile(st.Vault.Path, path) {
		gw = nil // it would change its own vault
	}
	if gw == nil {
		if _, err := existingVault(); err != nil {
			return nil, err
		}
	}
	return func(c *api.VaultChange) (*api.VaultChanged, error) {
		defer c.Wipe()
		if gw != nil {
			c.Path = path
			return gw.ChangeVault(context.Background(), c)
		}
		return api.ChangeVault(c)
	}, nil
}

func vaultList(args []string, out, errw io.Writer) error {
	fs := newFlags("vault list", vaultUsage)
	asJSON := fs.Bool("json", false, "print JSON")
	offline := fs.Bool("offline", false, "read the vault file even when a gateway could list it")
	pfile := passphraseFileFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := noOperands(fs)(); err != nil {
		return err
	}
	// A passphrase given on the command line is checked: the file is
	// opened with it, even while a gateway could list the vault.
	keys, err := listVault(*pfile, *offline || *pfile != "")
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(out, keys.Keys)
	}
	if len(keys.Keys) == 0 {
		fmt.Fprintln(out, "the vault holds no keys")
	}
	for _, k := range keys.Keys {
		fmt.Fprintf(out, "%s %s %s (%s)\n", k.Fingerprint, shown(k.Comment), k.Type, k.Added.Format("2006-01-02"))
		for _, c := range k.Certificates {
			until := "forever"
			if !c.ValidBefore.IsZero() {
				until = "until " + c.ValidBefore.Format(time.RFC3339)
			}
			if c.Expired {
				until = "expired " + c.ValidBefore.Format(time.RFC3339)
			}
			fmt.Fprintf(out, "  certificate %s %s principals %s, %s\n", c.Type, safetext.Quote(c.KeyID, safetext.Name), strings.Join(safetext.Quotes(c.Principals, safetext.Name), ","), until)
		}
	}
	return nil
}

// listVault lists the vault's keys through the gateway whose vault it is
// while that gateway has it unlocked (no passphrase asked), else (or when
// offline) from the file, opened with the passphrase.
func listVault(pfile string, offline bool) (*api.VaultKeys, error) {
	path, err := vaultPath()
	if err != nil {
		return nil, err
	}
	var gwErr error
	if c := servingGateway(); c != nil && !offline {
		keys, err := c.VaultList(context.Background(), path)
		if err == nil || !cannotServe(err) {
			return keys, err
		}
		gwErr = err
	}
	v, err := openVault(pfile)
	if err != nil {
		return nil, hintLocked(err, gwErr)
	}
	defer v.Wipe()
	return api.ListVault(v, time.Now())
}

func vaultRemove(args []string, out, errw io.Writer) error {
	fs := newFlags("vault remove", vaultUsage)
	pfile := passphraseFileFlag(fs)
	sock := socketFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("vault remove: name one key by fingerprint or comment")
	}
	change, err := vaultChanger(*sock)
	if err != nil {
		return err
	}
	pass, err := readPassphrase(*pfile, "Enter passphrase for the postern vault: ")
	if err != nil {
		return err
	}
	res, err := change(&api.VaultChange{Passphrase: pass, Remove: fs.Arg(0)})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "removed %s %s\n", res.Removed.Fingerprint, shown(res.Removed.Comment))
	return nil
}

func vaultPasswd(args []string, out, errw io.Writer) error {
	fs := newFlags("vault passwd", vaultUsage)
	pfile := passphraseFileFlag(fs)
	newFile := fs.String("new-passphrase-file", "", "read the new passphrase from `FILE`")
	sock := socketFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := noOperands(fs)(); err != nil {
		return err
	}
	p, err := kdfParams()
	if err != nil {
		return err
	}
	change, err := vaultChanger(*sock)
	if err != nil {
		return err
	}
	c := &api.VaultChange{Params: &p}
	defer c.Wipe()
	// Without a terminal or askpass program, the hints name the flags
	// that give each passphrase: $POSTERN_PASSPHRASE_FILE gives only the
	// old one.
	if c.Passphrase, err = readPassphrase(*pfile, "Enter passphrase for the postern vault: "); err != nil {
		return hintCannotAsk(err, "use --passphrase-file or $"+envPassphraseFile+" for the passphrase, and --new-passphrase-file for the new one")
	}
	if *newFile != "" {
		c.NewPassphrase, err = passphraseFromFile(*newFile)
	} else {
		c.NewPassphrase, err = askNewPassphrase("Enter the new passphrase: ")
	}
	if err != nil {
		return hintCannotAsk(err, "use --new-passphrase-file for the new passphrase")
	}
	if _, err := change(c); err != nil {
		return err
	}
	fmt.Fprintf(out, "passphrase changed (%s)\n", p)
	return nil
}
