package audit

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A log a newer postern wrote (a header of a later format version, well
// framed) is refused as such, naming the version: neither verify nor a
// gateway reports it as damaged or tampered with (exit status 3, "move it
// aside to start a new log"), where the log is sound and only newer.
func TestNewerFormatIsNamed(t *testing.T) {
	h := header{version: currentVersion + 1}
	frame, _ := newLinker().appendFrame(nil, recHeader, 0, [32]byte{}, h.marshal())
	rep, err := Verify(bytes.NewReader(frame), VerifyOptions{})
	if !errors.Is(err, ErrNewerFormat) || !strings.Contains(err.Error(), "version 3") {
		t.Fatalf("a log of format version 3: report %+v, error %v", rep, err)
	}
}

// An audit key file of a later version is refused as written by a newer
// postern, naming the file and the version, where it was "not a postern
// audit key file (or is damaged)".
func TestNewerKeyFileIsNamed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.key")
	b := append([]byte(keyMagic[:len(keyMagic)-1]), keyMagic[len(keyMagic)-1]+1)
	b = append(b, make([]byte, keyFileSize+16)...)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := readKeyFile(path)
	if err == nil || !errors.Is(err, ErrNewerFormat) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "version 2") {
		t.Fatalf("a key file of version 2: %v", err)
	}
}
