package gateway

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/xdg"
)

// The bastion's keys damaged (emptied, garbage, something else in their
// place) keep the bastion from serving, not the agent: the gateway
// starts, signs, and its bastion refuses every command saying which file
// is wrong, as for a damaged command journal, where the whole gateway
// refused to start, so that the person's SSH agent was gone.
func TestBastionKeysDamaged(t *testing.T) {
	for name, file := range map[string]string{"ca": xdg.BastionCAFile, "hostkey": xdg.BastionHostKeyFile, "known": xdg.BastionKnownHostsFile} {
		t.Run(name, func(t *testing.T) {
			dir := gatewayHome(t)
			bsock := filepath.Join(dir, "b.sock")
			if err := os.WriteFile(configFile(t, dir), []byte(fmt.Sprintf("[bastion]\nenabled = true\nsocket = %q\n", bsock)), 0o600); err != nil {
				t.Fatal(err)
			}
			_, _, stop := runGateway(t, dir)
			stop()
			path := filepath.Join(dir, "xdg_state_home", "postern", file)
			os.Remove(path)
			if file == xdg.BastionKnownHostsFile {
				// Written at each start: only what cannot be replaced stops it.
				if err := os.Mkdir(path, 0o700); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			g, sock, _ := runGateway(t, dir)
			st, err := api.NewClient(sock).Status(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if st.Bastion == nil || !strings.Contains(st.Bastion.Refusing, path) || st.Bastion.Damaged {
				t.Fatalf("the bastion with %s damaged: %+v", file, st.Bastion)
			}
			if _, f := g.bastionNow(); f == nil || !strings.Contains(f.error().Error(), "bastion's keys") {
				t.Fatalf("the bastion with %s damaged refuses: %v", file, f)
			}
		})
	}
}
