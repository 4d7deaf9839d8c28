package gateway

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/xdg"
)

// A syslog address the sealed copy never approved, which the gateway
// started with from a rewritten configuration, gets no event once the
// vault is unlocked: the events leave the log's encryption there.
func TestSealedPolicyUnapprovedSyslog(t *testing.T) {
	const strict = "approval = \"per-call\"\n"
	pass := []byte("seal pass")
	dir, cfg, vaultPath := sealedConfig(t, pass, strict)

	theirs, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer theirs.Close()
	rewritten := strict + "[audit]\nsyslog = \"udp:" + theirs.LocalAddr().String() + "\"\n"
	os.WriteFile(cfg, []byte(rewritten), 0o600)
	os.WriteFile(filepath.Join(filepath.Dir(vaultPath), xdg.ApprovedConfigFile), []byte(rewritten), 0o600)

	g, sock, _ := runGateway(t, dir)
	unlockGateway(t, sock, pass)
	waitStatus(t, g, "after the unlock", func(st api.Status) bool { return st.Config.Restored != "" })
	// What was sent before the unlock is theirs already.
	drain := func(d time.Duration) (got [][]byte) {
		buf := make([]byte, 64<<10)
		for {
			theirs.SetReadDeadline(time.Now().Add(d))
			n, _, err := theirs.ReadFrom(buf)
			if err != nil {
				return got
			}
			got = append(got, bytes.Clone(buf[:n]))
		}
	}
	drain(300 * time.Millisecond)
	if _, err := api.NewClient(sock).Lock(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, m := range drain(time.Second) {
		if bytes.Contains(m, []byte("vault_locked")) {
			t.Fatalf("an event after the unlock went to the syslog address the sealed copy never approved: %s", m)
		}
	}
}
