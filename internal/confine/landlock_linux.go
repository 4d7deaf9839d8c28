package confine

import (
	"os"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// landlockRights are the file system rights and scopes a run is
// restricted in: those of ABI 8 (the file rights of ABI 5, the scopes of
// ABI 6), downgraded to what the kernel supports. Network rights are not
// handled: the run keeps the network.
var landlockRights = landlock.Config{
	HandledAccessFS: landlock.V8.HandledAccessFS,
	Scoped:          landlock.V8.Scoped,
}.BestEffort()

// landlockMaxABI is the highest ABI whose rights landlockRights uses.
const landlockMaxABI = 8

// landlockThread restricts the calling thread: everything may be read
// and executed; the working directory, the writable trees, the hidden
// (now private) trees, /tmp, /dev and /proc may be written; abstract unix
// sockets and signals are scoped to the run. The mounts enforce the same
// and more (read-only files inside writable trees); Landlock also forbids
// changing them. It returns the ABI in force, 0 where the kernel has no
// Landlock.
func landlockThread(s *Spec) (int, error) {
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return 0, nil
	}
	// A hidden file is /dev/null now, and stays read-only; a file in a
	// list of trees gets a file's rights (Landlock refuses a directory's).
	rwDirs, rwFiles := dirsAndFiles(s.ReadWrite)
	hiddenDirs, _ := dirsAndFiles(s.Hide)
	writable := append([]string{s.Dir, "/tmp", "/proc", "/dev/shm"}, rwDirs...)
	writable = append(writable, s.ownPaths()...)
	writable = append(writable, hiddenDirs...)
	fd, flags, err := landlockRights.NewRulesetFD(
		landlock.RODirs("/"),
		landlock.RWDirs(writable...).WithRefer().IgnoreIfMissing(),
		landlock.RWDirs("/dev").WithIoctlDev(),
		landlock.RWFiles(append(rwFiles, s.Sockets...)...).IgnoreIfMissing(),
	)
	if err != nil {
		return 0, err
	}
	if fd < 0 {
		return 0, nil
	}
	defer unix.Close(fd)
	if err := llsys.LandlockRestrictSelf(fd, flags); err != nil {
		return 0, err
	}
	return min(abi, landlockMaxABI), nil
}

// dirsAndFiles splits paths into the directories among them (and those
// that do not exist, which the rules ignore) and the other files, as the
// run sees them.
func dirsAndFiles(paths []string) (dirs, files []string) {
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			files = append(files, p)
		} else {
			dirs = append(dirs, p)
		}
	}
	return dirs, files
}
