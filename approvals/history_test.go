package approvals

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A display-context file the gateway cannot read is said in its log, not
// passed over: the runs it named are not offered again.
func TestDamagedContextFileLogged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "context.json")
	if err := os.WriteFile(path, []byte("garbage{"), 0o600); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	e := NewEngine(Config{Log: slog.New(slog.NewTextHandler(&log, nil)), ContextFile: path, BootID: "b"})
	if runs := e.Restore(); len(runs) != 0 {
		t.Fatalf("%d runs restored from a damaged file", len(runs))
	}
	if !strings.Contains(log.String(), "display context from the last gateway not read") {
		t.Fatalf("nothing logged:\n%s", log.String())
	}
}
