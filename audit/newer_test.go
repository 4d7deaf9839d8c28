package audit

import (
	"bytes"
	"errors"
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
