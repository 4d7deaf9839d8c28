package gateway

import (
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/confine"
	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/syncbuf"
	"github.com/postern/postern/internal/xdg"
)

// The display context file is the user's to edit: a process it says is a
// confined run from before a restart, living in namespaces it made for
// itself and confined by nothing, is not restored as confined. StartRun
// would have refused it (verifyConfined); a restart does not either: the
// process was not launched by "postern run" (unshare is its parent), and
// is not served again at all.
func TestRestoredConfinedRunIsVerifiedAgain(t *testing.T) {
	cmd := exec.Command("unshare", "-Urpm", "--fork", "sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal("unshare:", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// The process in the new pid namespace: unshare's child.
	var pid int
	for deadline := time.Now().Add(5 * time.Second); pid == 0; {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/task/" + strconv.Itoa(cmd.Process.Pid) + "/children")
		if f := strings.Fields(string(b)); len(f) > 0 {
			pid, _ = strconv.Atoi(f[0])
		}
		if pid == 0 && time.Now().After(deadline) {
			t.Fatal("unshare could not make namespaces")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// unshare's child executes sleep.
	for range 500 {
		if e, err := procid.Host.Exe(pid); err == nil && strings.HasSuffix(e.Path, "/sleep") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	p, err := procid.Host.Inspect(pid)
	if err != nil {
		t.Fatal(err)
	}
	var ns procid.Namespaces
	for name, dst := range map[string]*uint64{"user": &ns.User, "pid": &ns.PID, "mnt": &ns.Mnt} {
		var st unix.Stat_t
		if err := unix.Stat("/proc/"+strconv.Itoa(pid)+"/ns/"+name, &st); err != nil {
			t.Fatal(err)
		}
		*dst = st.Ino
	}
	dir := gatewayHome(t)
	{
		sock := api.RunSocket(filepath.Join(dir, "xdg_runtime_dir", "agent.sock"), "r-forged")
		past := []approvals.Past{{
			BootID: "an-earlier-boot", Run: "r-forged", PID: pid, Start: p.StartTicks,
			Exe: p.Exe.Path, ExeDev: p.Exe.Dev, ExeIno: p.Exe.Ino, Socket: sock,
			Confinement: confine.Level{Namespaces: true, Landlock: 7}, NS: ns,
		}}
		b, err := json.Marshal(past)
		if err != nil {
			t.Fatal(err)
		}
		f, err := xdg.StateFile(xdg.ContextFile)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(f), 0o700)
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var log syncbuf.Buffer
	g, _, _ := runGatewayWith(t, dir, Options{Log: slog.New(slog.NewTextHandler(&log, nil))})
	runs, _ := g.engine.Sessions()
	for _, r := range runs {
		if r.PID == pid {
			t.Fatalf("pid %d, launched by unshare and confined by nothing, restored as %q", pid, r.Confinement)
		}
	}
	if !strings.Contains(log.String(), `msg="a run in the display context is not served again"`) {
		t.Fatalf("the forged run was not refused; the gateway's log:\n%s", log.String())
	}
}
