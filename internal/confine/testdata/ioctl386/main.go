// Command ioctl386 makes one ioctl that pushes at a terminal, by the
// system call numbers of the architecture it was built for. Built with
// GOARCH=386 and run on an amd64 kernel, it enters through the kernel's
// i386 compat entry: the run's seccomp filter must refuse it there too.
//
//	ioctl386 tiocsti|tiocspgrp
//
// It exits with the errno the ioctl got (0 when it was made), and with
// 100 on a usage error.
package main

import (
	"os"
	"syscall"
	"unsafe"
)

func main() {
	if len(os.Args) != 2 {
		os.Exit(100)
	}
	var req uintptr
	arg := int32('x')
	switch os.Args[1] {
	case "tiocsti":
		req = syscall.TIOCSTI
	case "tiocspgrp":
		req = syscall.TIOCSPGRP
		arg = int32(syscall.Getpgrp())
	default:
		os.Exit(100)
	}
	f, err := os.Open("/dev/null")
	if err != nil {
		os.Exit(100)
	}
	_, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), req, uintptr(unsafe.Pointer(&arg)))
	os.Exit(int(e))
}
