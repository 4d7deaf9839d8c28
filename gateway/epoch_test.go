package gateway

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/xdg"
)

// The vault epoch never repeats across restarts, so that the audit log
// names each epoch once: a gateway that finds its epoch file damaged
// (emptied, garbage, a directory or FIFO in its place) says so, naming
// the file, and counts on from above any epoch the file could have held,
// where it counted again from 0 without a word.
func TestDamagedEpochFileIsReportedAndNoEpochRepeats(t *testing.T) {
	for name, damage := range map[string]func(path string) error{
		"empty":     func(p string) error { return os.WriteFile(p, nil, 0o600) },
		"garbage":   func(p string) error { return os.WriteFile(p, []byte("forty-one\n"), 0o600) },
		"directory": func(p string) error { os.Remove(p); return os.Mkdir(p, 0o700) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := gatewayHome(t)
			epochFile := filepath.Join(dir, "xdg_state_home", "postern", xdg.EpochFile)
			ctx := context.Background()
			_, sock, stop := runGateway(t, dir)
			c := api.NewClient(sock)
			if _, err := c.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			st, err := c.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			before := st.Vault.Epoch
			stop()
			if err := damage(epochFile); err != nil {
				t.Fatal(err)
			}
			g, sock, _ := runGateway(t, dir)
			if st := g.Status(); !strings.Contains(st.Vault.EpochError, epochFile) {
				t.Errorf("status with the epoch file damaged: %+v", st.Vault)
			}
			if _, err := api.NewClient(sock).Lock(ctx); err != nil {
				t.Fatal(err)
			}
			if after := g.Status().Vault.Epoch; after <= before {
				t.Fatalf("epoch %d before the epoch file was damaged, %d after: an epoch repeats", before, after)
			}
		})
	}
}
