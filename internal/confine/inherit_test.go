package confine

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func TestCloseInheritedOnExec(t *testing.T) {
	// A descriptor opened without O_CLOEXEC, as a shell's redirection.
	fd, err := unix.Open(os.TempDir(), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if flags, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); flags&unix.FD_CLOEXEC != 0 {
		t.Fatal("the descriptor is close-on-exec already")
	}
	if err := CloseInheritedOnExec(); err != nil {
		t.Fatal(err)
	}
	if flags, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); flags&unix.FD_CLOEXEC == 0 {
		t.Fatalf("descriptor %d is still inherited by programs started", fd)
	}
}
