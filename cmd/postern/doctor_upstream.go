package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/crypto/ssh/agent"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/procid"
)

// upstreamWait bounds how long doctor waits for the upstream agent, as
// the gateway does for a listing.
const upstreamWait = 10 * time.Second

// upstreamCheck asks the upstream agent the gateway gates (st.Upstream)
// for its keys, as the gateway would: whether it can be reached, whether
// what listens there is an agent of the user's (not one of another
// user, nor the gateway itself, which the gateway does not ask), and
// whether the directory of its socket lets other users put their own
// agent there.
func upstreamCheck(st *api.Status) finding {
	u := st.Upstream
	f := finding{Check: "upstream"}
	fail := func(detail, fix string) finding {
		f.Status, f.Detail, f.Fix = "fail", u.Socket+": "+detail+": its keys are neither listed nor used", fix
		return f
	}
	if u.Stopped {
		f.Status, f.Detail, f.Fix = "warn", u.Socket+" is not the upstream agent the approved configuration names: its keys are neither listed nor used", "see what rewrote the approved configuration, then restart the gateway"
		return f
	}
	c, err := net.DialTimeout("unix", u.Socket, upstreamWait)
	if err != nil {
		return fail(fmt.Sprintf("cannot be reached (%v)", err), "start the upstream agent (the gateway reaches it again at the next request), or name the right socket with upstream in postern.toml(5)")
	}
	defer c.Close()
	cred, err := procid.PeerCred(c.(*net.UnixConn))
	switch {
	case err != nil:
		return fail(err.Error(), "")
	case cred.PID == st.PID:
		return fail("it leads back to the gateway itself", "name the socket of the upstream agent, not one of postern's")
	case !procid.OwnOrRoot(cred.UID):
		return fail(fmt.Sprintf("an agent of another user (uid %d, pid %d) listens there", cred.UID, cred.PID), "remove that socket and start your agent in a directory of your own (mode 0700)")
	}
	c.SetDeadline(time.Now().Add(upstreamWait))
	keys, err := agent.NewClient(c).List()
	if err != nil {
		return fail(fmt.Sprintf("does not list its keys (%v)", err), "see what listens there; restart the upstream agent")
	}
	f.Status, f.Detail = "ok", fmt.Sprintf("%s, %s", u.Socket, plural(len(keys), "key"))
	dir := filepath.Dir(u.Socket)
	if fi, err := os.Stat(dir); err == nil && fi.Mode().Perm()&0o022 != 0 {
		f.Status = "warn"
		f.Detail += fmt.Sprintf("; its directory %s is writable by other users (mode %04o): one of them can put an agent of its own there whenever the socket is gone", dir, fi.Mode().Perm())
		f.Fix = "give the upstream agent a directory of its own (mode 0700)"
	}
	return f
}
