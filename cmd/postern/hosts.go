package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/config"
	"github.com/postern/postern/internal/inventory"
	"github.com/postern/postern/internal/knownhosts"
	"github.com/postern/postern/internal/safetext"
	"github.com/postern/postern/internal/smallfile"
	"github.com/postern/postern/internal/xdg"
)

const hostsUsage = `Usage: postern hosts list [--json] [--socket PATH]
       postern hosts add NAME [--class CLASS] [--key-file FILE|-] [--fingerprint SHA256:...] [--socket PATH]
       postern hosts import [NAME...] [--class CLASS] [--file FILE] [--fingerprint SHA256:...] [--socket PATH]
       postern hosts remove NAME [--socket PATH]

The host inventory: the names and classes (such as production) that
policy rules match, bound to host keys. Only an approver outside every
run changes it; each change is recorded in the audit log. With a vault,
the inventory is sealed into it: changes need it unlocked, and an unlock
puts the sealed inventory back over a file rewritten meanwhile.

add binds NAME to the keys a file gives it: known_hosts lines or
ssh-keyscan output (plain or hashed entries for NAME), or a public key
file; without --key-file, the known_hosts files of the configuration.
import does the same for several names, or for every name the files give
plainly. --fingerprint keeps only the key with that fingerprint: the one
the host's administrator gave you. Compare what is shown with the host's
own keys (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub on the host).
`

func cmdHosts(args []string, out, errw io.Writer) error {
	if len(args) == 0 {
		return usagef("hosts: name a subcommand (list, add, import or remove)")
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "list":
		return hostsList(args, out, errw)
	case "add":
		return hostsAdd(args, out, errw)
	case "import":
		return hostsImport(args, out, errw)
	case "remove":
		return hostsRemove(args, out, errw)
	case "-h", "--help", "help":
		return &helpRequest{hostsUsage}
	}
	return usagef("hosts: unknown subcommand %q", sub)
}

func hostsList(args []string, out, errw io.Writer) error {
	fs := newFlags("hosts list", hostsUsage)
	asJSON := fs.Bool("json", false, "print JSON")
	c, err := gatewayFlags(fs, args, noOperands(fs))
	if err != nil {
		return err
	}
	res, err := c.Hosts(context.Background())
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(out, res.Hosts)
	}
	if len(res.Hosts) == 0 {
		fmt.Fprintln(out, "no hosts (postern hosts add NAME, or postern hosts import)")
	}
	for _, h := range res.Hosts {
		printHost(out, h)
	}
	return nil
}

func printHost(out io.Writer, h api.Host) {
	class := h.Class
	if class == "" {
		class = "-"
	}
	fmt.Fprintf(out, "%s  class %s  since %s\n", shown(h.Name), shown(class), h.Added.Local().Format("2006-01-02 15:04"))
	for _, k := range h.Keys {
		typ, _, _ := strings.Cut(k.Key, " ")
		fmt.Fprintf(out, "    %s %s  from %s\n", shown(typ), k.Fingerprint, safetext.Field(k.Source, safetext.Line))
	}
}

// keyFlags are the flags of add and import that choose keys.
type keyFlags struct {
	class       *string
	fingerprint *string
	classSet    bool
}

func addKeyFlags(fs *flag.FlagSet) *keyFlags {
	return &keyFlags{
		class:       fs.String("class", "", "the host's class, such as production"),
		fingerprint: fs.String("fingerprint", "", "take only the key with this fingerprint (SHA256:...)"),
	}
}

// parsed notes which flags were given, after parsing.
func (k *keyFlags) parsed(fs *flag.FlagSet) {
	k.classSet = given(fs, "class")
}

// source is a text to take keys from, and how to name it to a person.
// A file the person named (--key-file, --file) may be a public key
// file, whose keys are taken for the name given; a known_hosts file of
// the configuration, which any program can add lines to, gives a name
// only the keys of entries for it.
type source struct {
	label   string
	text    []byte
	pubKeys bool
}

func hostsAdd(args []string, out, errw io.Writer) error {
	fs := newFlags("hosts add", hostsUsage)
	kf := addKeyFlags(fs)
	keyFile := fs.String("key-file", "", "take the keys from FILE (known_hosts or ssh-keyscan lines, or a public key file; - for standard input)")
	var name string
	c, err := gatewayFlags(fs, args, func() (err error) {
		if name, err = oneOperand(fs); err != nil {
			return err
		}
		if name == "" {
			return usagef("hosts add: give the host's name")
		}
		return nil
	})
	if err != nil {
		return err
	}
	kf.parsed(fs)
	srcs, err := keySources(*keyFile)
	if err != nil {
		return err
	}
	return addHost(c, out, errw, name, kf, srcs, revocations(*keyFile, srcs))
}

func hostsImport(args []string, out, errw io.Writer) error {
	fs := newFlags("hosts import", hostsUsage)
	kf := addKeyFlags(fs)
	file := fs.String("file", "", "read FILE instead of the configured known_hosts files")
	c, err := gatewayFlags(fs, args, nil)
	if err != nil {
		return err
	}
	kf.parsed(fs)
	names := fs.Args()
	srcs, err := keySources(*file)
	if err != nil {
		return err
	}
	if len(srcs) == 0 {
		return withHint(errors.New("hosts import: no known_hosts file to read (none of those the configuration names exists)"), `name one with --file, or list yours as known_hosts in postern.toml`)
	}
	if len(names) == 0 {
		for _, s := range srcs {
			// A line's first name: the others ("host,10.0.0.5", as ssh
			// writes with CheckHostIP) name the same key, which belongs
			// to one host, and a login is known by its host key
			// whatever name it used.
			named := map[int]bool{}
			for _, f := range knownhosts.Named(s.text) {
				if named[f.Line] {
					continue
				}
				named[f.Line] = true
				if !slices.Contains(names, f.Name) {
					names = append(names, f.Name)
				}
			}
		}
		if len(names) == 0 {
			return errors.New("hosts import: the files name no host plainly; give the names to look up (hashed entries hide them)")
		}
	}
	failed := 0
	revs := revocations(*file, srcs)
	for _, n := range names {
		if err := addHost(c, out, errw, n, kf, srcs, revs); err != nil {
			if api.HasCode(err, api.CodeDenied) {
				return err
			}
			errorf(errw, "%s: %v", shown(n), err)
			if h := hintFor("hosts", err); h != "" {
				hintf(errw, "%s", h)
			}
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("hosts import: %d of %d hosts not added", failed, len(names))
	}
	return nil
}

// unreadLines names the lines of srcs that were read as neither
// known_hosts entries nor public keys, for an error that found no key: a
// damaged file, or not the file meant; "" when there are none.
func unreadLines(srcs []source) string {
	var parts []string
	for _, s := range srcs {
		bad := knownhosts.Malformed(s.text)
		if len(bad) == 0 {
			continue
		}
		nums := make([]string, 0, 5)
		for _, no := range bad[:min(len(bad), 5)] {
			nums = append(nums, strconv.Itoa(no))
		}
		list := strings.Join(nums, ", ")
		if len(bad) > 5 {
			list += fmt.Sprintf(" and %d more", len(bad)-5)
		}
		parts = append(parts, fmt.Sprintf("%s line %s", s.label, list))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (neither a known_hosts entry nor a public key: " + strings.Join(parts, "; ") + ")"
}

// revocations returns where the @revoked lines of srcs, and of the
// configured known_hosts files when srcs is a file the person named (ssh
// refuses a key they revoke), revoke each key: its blob, to the file and
// line that revokes it, read once for every host added.
func revocations(path string, srcs []source) map[string]string {
	revs := srcs
	if path != "" {
		known, _ := knownHostsSources() // unreadable: srcs' own lines still count
		revs = append(slices.Clip(srcs), known...)
	}
	by := map[string]string{}
	for _, s := range revs {
		for _, r := range knownhosts.Revoked(s.text) {
			blob := string(r.Key.Marshal())
			if _, ok := by[blob]; !ok {
				by[blob] = fmt.Sprintf("%s line %d", s.label, r.Line)
			}
		}
	}
	return by
}

// addHost finds name's keys in srcs, leaving out those revoked names
// (revocations), and asks the gateway to bind them.
func addHost(c *api.Client, out, errw io.Writer, name string, kf *keyFlags, srcs []source, revoked map[string]string) error {
	var keys []api.HostKey
	var pubs []ssh.PublicKey
	left := 0
	for _, s := range srcs {
		for _, f := range knownhosts.KeysFor(s.text, name, s.pubKeys) {
			if *kf.fingerprint != "" && ssh.FingerprintSHA256(f.Key) != *kf.fingerprint {
				continue
			}
			how := fmt.Sprintf("%s line %d", s.label, f.Line)
			switch {
			case f.Hashed:
				how += " (hashed entry)"
			case f.Bare:
				how += " (a public key, no host field)"
			}
			if by, ok := revoked[string(f.Key.Marshal())]; ok {
				warningf(errw, "%s: %s %s from %s is revoked (@revoked at %s): not added", shown(name), f.Key.Type(), ssh.FingerprintSHA256(f.Key), how, by)
				left++
				continue
			}
			keys = append(keys, api.HostKey{Key: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(f.Key))), Source: how})
			pubs = append(pubs, f.Key)
		}
	}
	if len(keys) == 0 && left > 0 {
		return withHint(fmt.Errorf("every key for %s in %s is revoked", name, labels(srcs)), fmt.Sprintf("ssh-keyscan %s | postern hosts add %s --key-file -, then compare the fingerprints it shows", name, name))
	}
	if len(keys) == 0 && kf.classSet && *kf.fingerprint == "" && !slices.ContainsFunc(srcs, func(s source) bool { return s.pubKeys }) {
		// The class of a host the inventory has, whatever known_hosts
		// (which any program can edit) holds now.
		if res, err := c.Hosts(context.Background()); err == nil && inventory.Find(res.Hosts, name) >= 0 {
			return sendHost(c, out, api.HostsAddArgs{Name: name, Class: kf.class}, name)
		}
	}
	if len(keys) == 0 {
		hint := fmt.Sprintf("ssh-keyscan %s | postern hosts add %s --key-file -, then compare the fingerprints it shows", name, name)
		if *kf.fingerprint != "" {
			return withHint(fmt.Errorf("no key with fingerprint %s for %s in %s", *kf.fingerprint, name, labels(srcs)), hint)
		}
		return withHint(fmt.Errorf("no key for %s in %s%s", name, labels(srcs), unreadLines(srcs)), hint)
	}
	a := api.HostsAddArgs{Name: name, Keys: keys}
	if kf.classSet {
		a.Class = kf.class
	}
	had, err := c.Hosts(context.Background())
	if err != nil {
		return err
	}
	if err := sendHost(c, out, a, name); err != nil {
		return err
	}
	var known []string
	i := inventory.Find(had.Hosts, name)
	if i >= 0 {
		for _, k := range had.Hosts[i].Keys {
			known = append(known, k.Fingerprint)
		}
	}
	for j, p := range pubs {
		fp := ssh.FingerprintSHA256(p)
		if slices.Contains(known, fp) {
			continue // the inventory had it: checked when it came in
		}
		if i >= 0 {
			// A host the inventory had gains a key: what a line another
			// program added to known_hosts would give it.
			warningf(errw, "%s gained a key it did not have: %s %s from %s", shown(name), p.Type(), fp, keys[j].Source)
		}
		if *kf.fingerprint != "" {
			continue // the person named it
		}
		hintf(errw, "check %s %s against the host's own key (ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub on %s)", p.Type(), fp, shown(name))
	}
	return nil
}

// sendHost asks the gateway for the change a and prints host name as it
// is after it.
func sendHost(c *api.Client, out io.Writer, a api.HostsAddArgs, name string) error {
	res, err := c.AddHost(context.Background(), a)
	if err != nil {
		return err
	}
	if i := inventory.Find(res.Hosts, name); i >= 0 {
		printHost(out, res.Hosts[i])
	}
	return nil
}

func hostsRemove(args []string, out, errw io.Writer) error {
	fs := newFlags("hosts remove", hostsUsage)
	var name string
	c, err := gatewayFlags(fs, args, func() (err error) {
		if name, err = oneOperand(fs); err != nil {
			return err
		}
		if name == "" {
			return usagef("hosts remove: give the host's name")
		}
		return nil
	})
	if err != nil {
		return err
	}
	// The host as the inventory names it: another spelling of its name
	// (case, the DNS root's dot) finds it too.
	removed := name
	if had, err := c.Hosts(context.Background()); err == nil {
		if i := inventory.Find(had.Hosts, name); i >= 0 {
			removed = had.Hosts[i].Name
		}
	}
	if _, err := c.RemoveHost(context.Background(), name); err != nil {
		return err
	}
	fmt.Fprintf(out, "removed %s\n", shown(removed))
	return nil
}

// keySources reads the file given (standard input for "-"), or without
// one the known_hosts files the configuration names.
func keySources(path string) ([]source, error) {
	switch path {
	case "":
		return knownHostsSources()
	case "-":
		// As a named file: bounded, and too much is an error, not a cut.
		b, err := io.ReadAll(io.LimitReader(os.Stdin, knownhosts.MaxFile+1))
		if err == nil && len(b) > knownhosts.MaxFile {
			err = fmt.Errorf("standard input: larger than %d MiB", knownhosts.MaxFile>>20)
		}
		return []source{{label: "standard input", text: b, pubKeys: true}}, err
	}
	b, err := smallfile.Read(path, knownhosts.MaxFile)
	return []source{{label: "file " + path, text: b, pubKeys: true}}, err
}

// knownHostsSources reads the known_hosts files the configuration names.
func knownHostsSources() ([]source, error) {
	path, err := xdg.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	var out []source
	for _, f := range knownhosts.Expand(cfg.KnownHosts) {
		if b, err := smallfile.Read(f, knownhosts.MaxFile); err == nil {
			out = append(out, source{label: "known_hosts " + f, text: b})
		}
	}
	return out, nil
}

func labels(srcs []source) string {
	if len(srcs) == 0 {
		return "any known_hosts file (none could be read)"
	}
	var l []string
	for _, s := range srcs {
		l = append(l, s.label)
	}
	return strings.Join(l, ", ")
}
