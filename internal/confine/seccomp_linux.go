package confine

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The seccomp filter refuses, with EPERM, the two ioctls that push input
// into a terminal: TIOCSTI (fake keystrokes into the terminal the run
// shares with the user's shell, read by the shell once the run ends) and
// TIOCLINUX (the console's paste); and, when the run shares the person's
// terminal, TIOCSPGRP (tcsetpgrp), with which a program of the run that
// the person suspended (Ctrl-Z: the shell takes the terminal back, the
// program ignores the signal and goes on) would make itself the
// terminal's foreground again and read what the person types at the
// shell's prompt; a shell inside such a run has no job control. A run
// with a terminal of its own ([Spec.Terminal]) reaches no other: there
// TIOCSPGRP is allowed, and its shells have job control.
// A 32-bit program (i386 on amd64, arm on arm64) makes its ioctls by other
// numbers, under another audit architecture: the filter refuses the same
// requests there. It also refuses the x32 system call numbers, through
// which the filter's numbers could be sidestepped.
//
// It refuses the keyring system calls (add_key, request_key, keyctl),
// native and compat: the kernel lets every process of the person's uid
// link the person's user keyring, in any user namespace, by the serial
// /proc/keys shows, and a keyring linked into the run's own session
// keyring would make the person's keys (ecryptfs passphrases, Kerberos
// tickets) the run's to read, and the keyring the run's to fill.

const (
	seccompRetAllow = 0x7fff0000
	seccompRetErrno = 0x00050000
	x32SyscallBit   = 0x40000000
	// Offsets in struct seccomp_data.
	offNr   = 0
	offArch = 4
	offArg1 = 24 // low 32 bits of args[1] on little-endian machines
)

func stmt(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
func jump(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
}

// seccompProgram builds the filter for one architecture (audit arch and
// ioctl number), with a compat architecture when the machine has one,
// refusing the keyring system calls and the ioctl requests refused.
func seccompProgram(refused []uint32) []unix.SockFilter {
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
	)
	eperm := uint32(seccompRetErrno | uint32(unix.EPERM))
	// Jumps name their targets; the offsets are filled in once the
	// program is laid out.
	type insn struct {
		f      unix.SockFilter
		jt, jf string
		label  string
	}
	var prog []insn
	add := func(label string, f unix.SockFilter, jt, jf string) {
		prog = append(prog, insn{f: f, jt: jt, jf: jf, label: label})
	}
	add("", stmt(ld, offArch), "", "")
	add("", jump(jeq, nativeArch, 0, 0), "", "compat")
	add("", stmt(ld, offNr), "", "")
	add("", jump(jge, x32SyscallBit, 0, 0), "deny", "")
	add("", jump(jeq, nativeIoctl, 0, 0), "ioctl", "")
	for _, nr := range nativeKeyring {
		add("", jump(jeq, nr, 0, 0), "deny", "")
	}
	add("", stmt(ret, seccompRetAllow), "", "")
	add("compat", jump(jeq, compatArch, 0, 0), "", "allow")
	add("", stmt(ld, offNr), "", "")
	add("", jump(jeq, compatIoctl, 0, 0), "ioctl", "")
	for _, nr := range compatKeyring {
		add("", jump(jeq, nr, 0, 0), "deny", "")
	}
	add("", stmt(ret, seccompRetAllow), "", "")
	// ioctl: look at the request.
	add("ioctl", stmt(ld, offArg1), "", "")
	for _, req := range refused {
		add("", jump(jeq, req, 0, 0), "deny", "")
	}
	add("allow", stmt(ret, seccompRetAllow), "", "")
	add("deny", stmt(ret, eperm), "", "")
	at := map[string]int{}
	for i, in := range prog {
		if in.label != "" {
			at[in.label] = i
		}
	}
	out := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		out[i] = in.f
		if in.jt != "" {
			out[i].Jt = uint8(at[in.jt] - i - 1)
		}
		if in.jf != "" {
			out[i].Jf = uint8(at[in.jf] - i - 1)
		}
	}
	return out
}

// refusedIoctls are the ioctl requests a run's programs may not make:
// TIOCSPGRP too when the run shares the person's terminal.
func refusedIoctls(ownTerminal bool) []uint32 {
	r := []uint32{unix.TIOCSTI, unix.TIOCLINUX}
	if !ownTerminal {
		r = append(r, unix.TIOCSPGRP)
	}
	return r
}

// seccompThread installs the filter on the calling thread, and reports
// whether there is one: none on an architecture it does not know.
func seccompThread(ownTerminal bool) (bool, error) {
	if nativeArch == 0 {
		return false, nil
	}
	prog := seccompProgram(refusedIoctls(ownTerminal))
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	return true, unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0)
}
