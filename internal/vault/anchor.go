package vault

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/postern/postern/internal/atomicfile"
	"github.com/postern/postern/internal/smallfile"
)

// The generation anchor. Every save raises the vault's generation, inside
// the authenticated body; a copy of the file taken earlier carries an
// earlier one, and opens as well as the current file. So every writer
// also records the highest generation it saved in a small file beside the
// vault, PATH.generation, and Open refuses a vault whose generation is
// below it (ErrRolledBack): an older copy put back in place while no
// gateway watched is found out at the next unlock.
//
// The anchor is written after the vault (a crash between the two leaves
// it one generation behind, which only weakens the check for that save)
// and never lowered. It sits beside the vault, so whoever can replace the
// vault and the anchor together with older copies of both defeats it, as
// a consistent restore from backup would; a person who restores a backup
// on purpose removes the anchor.
const anchorSuffix = ".generation"

// anchorMagic starts the anchor file: "postern-vault-generation 1 ID GEN".
const anchorMagic = "postern-vault-generation 1"

// ErrRolledBack: the vault file is older than one already saved at its
// path (its generation is below the anchor's).
var ErrRolledBack = errors.New("vault was replaced by an older copy")

func anchorPath(path string) string { return path + anchorSuffix }

// readAnchor returns the vault id and generation the anchor at path
// records; ok is false when there is none.
func readAnchor(path string) (id [16]byte, gen uint64, ok bool, err error) {
	b, err := smallfile.Read(anchorPath(path), 64<<10)
	if errors.Is(err, fs.ErrNotExist) {
		return id, 0, false, nil
	}
	if err != nil {
		return id, 0, false, err
	}
	f := strings.Fields(string(bytes.TrimSpace(b)))
	if len(f) != 4 || f[0]+" "+f[1] != anchorMagic {
		return id, 0, false, fmt.Errorf("%s is not a vault generation anchor", anchorPath(path))
	}
	raw, err := hex.DecodeString(f[2])
	if err != nil || len(raw) != len(id) {
		return id, 0, false, fmt.Errorf("%s holds a malformed vault id", anchorPath(path))
	}
	if gen, err = strconv.ParseUint(f[3], 10, 64); err != nil {
		return id, 0, false, fmt.Errorf("%s holds a malformed generation", anchorPath(path))
	}
	return [16]byte(raw), gen, true, nil
}

// anchorState is what the anchor recorded when a vault was about to be
// read: read before the file, so that a save between the two (which
// writes the file first, the anchor after) never makes the file read look
// older than the anchor.
type anchorState struct {
	id  [16]byte
	gen uint64
	ok  bool
}

func anchorBefore(path string) anchorState {
	id, gen, ok, err := readAnchor(path)
	return anchorState{id: id, gen: gen, ok: ok && err == nil}
}

// check refuses generation gen of vault id at path when the anchor
// recorded a later one for the same vault. An anchor of another vault
// (the path was set up anew) or a malformed one does not refuse: the
// next save writes it again.
func (a anchorState) check(path string, id [16]byte, gen uint64) error {
	if !a.ok || a.id != id || gen >= a.gen {
		return nil
	}
	return &pathError{
		msg: fmt.Sprintf("vault %s is at generation %d, but generation %d of it was saved before (as %s records): the file was replaced by an older copy",
			path, gen, a.gen, anchorPath(path)),
		err: ErrRolledBack,
	}
}

// raiseAnchor records generation gen of vault id at path, unless the
// anchor already holds a later one of the same vault. An anchor that
// cannot be read is written anew, and the error says what was found
// there (matching ErrAnchorDamaged, also when it cannot be written anew),
// so that the caller can say that no rollback check was made.
func raiseAnchor(path string, id [16]byte, gen uint64) error {
	aid, agen, ok, rerr := readAnchor(path)
	if rerr == nil && ok && aid == id && agen >= gen {
		return nil
	}
	line := fmt.Sprintf("%s %s %d\n", anchorMagic, hex.EncodeToString(id[:]), gen)
	err := atomicfile.Write(anchorPath(path), []byte(line), 0o600)
	switch {
	case rerr != nil && err != nil:
		return fmt.Errorf("%w: %w; it cannot be written anew either: %w", ErrAnchorDamaged, rerr, err)
	case err != nil:
		return err
	case rerr != nil:
		return fmt.Errorf("%w: %w; it now records generation %d", ErrAnchorDamaged, rerr, gen)
	}
	return nil
}

// ErrAnchorDamaged: the generation anchor could not be read, so the vault
// was opened without the check that it is no older copy; Anchor wrote it
// anew.
var ErrAnchorDamaged = errors.New("the vault's generation anchor could not be read, so the vault was not checked against it")

// Anchor records the vault's generation in its anchor, if the anchor
// holds an earlier one (or none): a gateway calls it after each unlock, so
// that a vault no postern command has saved since the anchor appeared is
// anchored too. An anchor that could not be read is written anew, and the
// error matches ErrAnchorDamaged.
func (v *Vault) Anchor() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return raiseAnchor(v.path, v.hdr.id, v.generation)
}
