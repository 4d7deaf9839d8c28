package vault

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// A generation anchor that cannot be read checks nothing: Anchor writes
// it anew, and says what it found, naming the file, so that the unlock
// that made no rollback check can say so, where the damage was mended
// without a word and an older vault copy put back with it went unseen.
func TestAnchorSaysItMendedADamagedAnchor(t *testing.T) {
	useFastKDF(t)
	v, path := newTestVault(t)
	mustWrite(t, anchorPath(path), []byte("garbage\n"))
	if err := v.Anchor(); err == nil || !strings.Contains(err.Error(), anchorPath(path)) {
		t.Fatalf("a damaged anchor written anew: %v", err)
	}
	if _, gen, ok, err := readAnchor(path); err != nil || !ok || gen != v.Generation() {
		t.Fatalf("the anchor after: generation %d, %v, %v", gen, ok, err)
	}
	if err := v.Anchor(); err != nil {
		t.Fatalf("an anchor already in place: %v", err)
	}
}

// An anchor that cannot be read nor written anew (a directory in its
// place) checks nothing either: Anchor says so as for a damaged one,
// where it said only that the write failed, and the unlock that made no
// rollback check did not say it made none.
func TestAnchorThatCannotBeMendedSaysNoCheckWasMade(t *testing.T) {
	useFastKDF(t)
	v, path := newTestVault(t)
	if err := os.Remove(anchorPath(path)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(anchorPath(path), 0o700); err != nil {
		t.Fatal(err)
	}
	err := v.Anchor()
	if !errors.Is(err, ErrAnchorDamaged) || !strings.Contains(err.Error(), anchorPath(path)) {
		t.Fatalf("an anchor with a directory in its place: %v", err)
	}
}
