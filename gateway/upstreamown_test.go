package gateway

import (
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh/agent"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/syncbuf"
)

// An upstream socket that is the gateway's own control socket (a link
// to it put where the upstream agent was, or the path given) leads back
// to the gateway, as its agent socket would: it is not asked, where each
// listing sent it an agent request, which the control socket never
// answers, and waited for an answer until the upstream's time ran out.
func TestUpstreamThatIsTheControlSocket(t *testing.T) {
	dir := gatewayHome(t)
	sock := filepath.Join(dir, "xdg_runtime_dir", "agent.sock")
	var log syncbuf.Buffer
	runGatewayWith(t, dir, Options{Socket: sock, Upstream: api.ControlSocket(sock), Log: slog.New(slog.NewTextHandler(&log, nil))})
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if l, err := agent.NewClient(c).List(); err != nil || len(l) != 0 {
		t.Fatalf("list: %v, %v", l, err)
	}
	if !strings.Contains(log.String(), "leads back to this agent's own socket") {
		t.Errorf("the gateway asked its own control socket for the upstream agent's keys:\n%s", log.String())
	}
}
