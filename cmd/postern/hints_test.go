package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/postern/postern/internal/keychain"
)

// A keychain that stayed locked (its prompt dismissed, or not shown)
// gets its own hint, not the one for a keychain that is not there.
func TestHintForADismissedKeychainPrompt(t *testing.T) {
	err := fmt.Errorf("keychain: unlock the entry: %w", keychain.ErrDismissed)
	if h := hintFor("unlock", err); !strings.Contains(h, "unlock the keychain") || !strings.Contains(h, "passphrase") {
		t.Fatalf("hint for %q: %q", err, h)
	}
	unavailable := fmt.Errorf("%w: no bus", keychain.ErrUnavailable)
	if a, b := hintFor("unlock", err), hintFor("unlock", unavailable); a == b {
		t.Fatalf("the same hint for a dismissed prompt and no keychain: %q", a)
	}
}
