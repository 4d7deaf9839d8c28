// Package ptyrelay puts a private pseudo-terminal between a confined run
// and the person's terminal.
//
// A program given the person's terminal as its standard input, output or
// error can read that terminal whenever it likes: a process that called
// setsid(2) has no controlling terminal, so job control never stops it,
// and a run started with & (or continued with bg) would read what the
// person types at the shell, a password or a passphrase among it. Given a
// terminal of its own, the run holds nothing of the person's:
//
//   - [Open] makes a new pseudo-terminal with the person's terminal's
//     settings and size: [Relay.Terminal] is to be the program's
//     controlling terminal, in a session of its own (even when none of
//     its standard descriptors is a terminal: the caller's controlling
//     terminal would be its /dev/tty), and [Relay.Files] gives it to the
//     program in place of each standard descriptor that is a terminal;
//   - [Relay.Start] copies what the program writes to the person's
//     terminal (while the caller is in the background only if the
//     terminal has no tostop set, as for a background job's writes), and
//     what the person types to the program, the latter only while the
//     caller is the terminal's foreground job: the relay ignores
//     SIGTTIN and SIGTTOU from then on (for the whole process), so that,
//     read from the background, the person's terminal answers EIO, and
//     the relay waits for [Relay.Continue];
//   - while it relays input, the person's terminal is in raw mode, so
//     that Ctrl-C, Ctrl-Z and the like reach the private terminal as
//     characters and its line discipline signals the run's program
//     (and the caller hears of each Ctrl-Z, to stop the whole run);
//     [Relay.Pause] gives the terminal back its settings (after the
//     program's last output) before the caller stops, [Relay.Continue]
//     takes it again once the caller is continued in the foreground, and
//     [Relay.Close] gives it back for good once the program's output has
//     ended; [Relay.Signal] passes on the interrupt and quit the
//     caller gets from the person's terminal when input is not relayed.
//
// Every method of a nil *Relay does nothing, and Files returns its
// argument: a caller with no terminal to relay keeps one code path.
package ptyrelay
