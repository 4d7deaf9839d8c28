package confine

import (
	"encoding/json"
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// The helper and its starter talk over a SOCK_SEQPACKET pair: the starter
// sends the Spec as one JSON message; the helper answers with a report
// once the program runs (carrying the program's pid in SCM_CREDENTIALS,
// which the kernel translates into the starter's pid namespace), and with
// a second report when it ends.

// report is a message from the helper.
type report struct {
	Error    string `json:"error,omitempty"`
	Exec     bool   `json:"exec,omitempty"` // Error is the program's own exec failing
	Landlock int    `json:"landlock,omitempty"`
	// NoSeccomp: the program runs without the seccomp filter.
	NoSeccomp bool `json:"no_seccomp,omitempty"`
	Stopped   bool `json:"stopped,omitempty"` // every process of the run is stopped; more reports follow
	exitReport
}

type exitReport struct {
	Exit   int `json:"exit"`
	Signal int `json:"signal,omitempty"`
}

// maxMessage bounds one message in either direction.
const maxMessage = 1 << 20

// readReport reads one report, and the pid of the credentials sent with
// it (0 without).
func readReport(f *os.File) (report, int, error) {
	var rep report
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(unix.SizeofUcred))
	raw, err := f.SyscallConn()
	if err != nil {
		return rep, 0, err
	}
	var n, oobn int
	var rerr error
	err = raw.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), buf, oob, 0)
		return rerr != unix.EAGAIN
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return rep, 0, err
	}
	if n == 0 {
		return rep, 0, errors.New("connection closed")
	}
	if err := json.Unmarshal(buf[:n], &rep); err != nil {
		return rep, 0, err
	}
	pid := 0
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for _, m := range msgs {
			if cred, err := unix.ParseUnixCredentials(&m); err == nil {
				pid = int(cred.Pid)
			}
		}
	}
	return rep, pid, nil
}

// sendReport sends a report; with pid > 0, with credentials naming that
// process of the sender's pid namespace.
func sendReport(fd int, rep report, pid int) error {
	b, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	var oob []byte
	if pid > 0 {
		oob = unix.UnixCredentials(&unix.Ucred{Pid: int32(pid), Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())})
	}
	return unix.Sendmsg(fd, b, oob, nil, 0)
}
