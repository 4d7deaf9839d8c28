// Package bastion is postern's local SSH bastion: ssh reaches a host
// through it, and it runs each remote command on the person's behalf —
// after the approval decision allows it, written to the command journal
// before it is sent, with its end written there before ssh learns it. A
// command whose end was not observed is unknown, and is never sent again
// on the bastion's own initiative.
//
// # The way in: postern connect
//
// "postern ssh-config" prints the ssh_config block that sends hosts
// through the bastion:
//
//	ProxyCommand 'postern' connect --socket 'SOCK' --fdpass -- %r %h %p
//	ProxyUseFdpass yes
//	UserKnownHostsFile "$XDG_STATE_HOME/postern/bastion_known_hosts"
//	StrictHostKeyChecking yes
//	CheckHostIP no
//	IdentityAgent none
//	ForwardAgent no
//
// ssh starts "postern connect" (the helper), which calls Connect: it
// dials the bastion's Unix socket, writes the preamble, and once the
// bastion answers "ok" hands the socket to ssh (--fdpass) or copies bytes
// both ways. From then on ssh speaks SSH to the bastion as if it were the
// host.
//
// # The preamble
//
// Before any SSH byte, the helper writes one line naming the destination
// ssh resolved from its configuration, user and host query-escaped:
//
//	postern-connect/1 USER HOST PORT
//
// ParseTarget checks the three fields; the line is at most 1024 bytes.
// The bastion answers one line, "ok" or "error MESSAGE" (ssh shows the
// message and exits 255). Both sides read these lines a byte at a time, so
// neither consumes a byte of the SSH that follows.
//
// # Who is asking
//
// SSH client authentication is not used: the kernel says who connected.
// On accept the bastion admits the helper as every gateway socket does
// (procid.Table.Admit): it reads the helper's peer credentials, pins it
// (pid, start time, executable; a pidfd where there is one), and refuses
// a helper of another user (root excepted). The requester — the process
// every decision is about — is the helper's parent: the ssh that runs it
// as its ProxyCommand. The bastion pins the parent while the helper is
// alive to vouch for the relationship, requires that it started before
// the helper and is in the helper's session (ssh runs its ProxyCommand in
// its own; a parent in another session adopted a helper whose parent
// exited, and a session bound to an adopter such as systemd --user would
// cover every process it adopted), and then verifies the helper again, so
// that the parent pid was read from the process that connected. The requester's ancestry
// ("ssh (4121) ← git ← bash ← claude (3988)") goes to the log and the
// journal. Every decision verifies the requester again; a requester that
// exited or exec'd is identity_mismatch.
//
// # Host certificates
//
// The bastion answers ssh with a host certificate for exactly the name ssh
// asked for. Identity holds a certificate authority and a host key (files
// bastion_ca and bastion_host_key in the state directory, mode 0600, made
// on first use); for each connection the authority signs a certificate of
// the host key whose one principal is the preamble's host, valid from five
// minutes ago for an hour. bastion_known_hosts holds one line,
// "@cert-authority * <the authority's key>" (Identity.KnownHostsLine), so
// ssh accepts the bastion for every host it sends there, and for no other
// name. The local hop offers only AES-GCM: with AES instructions it is
// the cheapest cipher, and every byte is encrypted twice.
//
// The real host is verified apart, against the person's own known_hosts
// files (Config.KnownHosts): an unknown key, a changed key or a revoked
// key refuses the connection with a message that says what to do (for an
// unknown key, the ssh command line that reaches the host without the
// bastion and records its key in the first of those files, also when
// none exists yet; for a changed one, the ssh-keygen -R for the file
// that holds the old key), and the
// key exchange asks only for the key types known_hosts holds for the
// host. The fingerprint verified is the destination every decision, audit
// event and journal entry names.
//
// # Where the decision is asked
//
// A session on the client connection collects its terminal (pty-req) and
// environment (env: the locale only, C, POSIX or UTF-8) requests and refuses X11 and agent forwarding; its
// exec, shell or subsystem request is the command. The first command on a
// client connection dials the host; each signature its public key
// authentication needs asks the approval decision (approvals.Decider,
// action sign) about this command: the requester, the key, the verified
// host key and remote user, the kind of session (exec, shell or
// subsystem, from the session's request: a command line cannot pass for a
// shell), its command line or subsystem name, whether it has a terminal,
// and the earlier attempt when it is a retry. A refusal ends the authentication: the host sees no
// login. Later commands on the same client connection share that host
// connection and ask again (action command). While the keyring is locked
// the host is not dialed, and the command is refused as vault_locked.
//
// # A command's life
//
//  1. The entry is written to the journal (journal.Start) with the
//     verified host key and the decision that allowed it; a failed write
//     refuses the command. Then the audit event command_started; a failed
//     audit write refuses it too. Intent is durable before any effect.
//  2. A session opens on the host, the terminal and environment requests
//     follow, then the command — for hosts matching Config.Markers, an
//     exec command wrapped by marker.Wrap, which leaves start and exit
//     records on the host.
//  3. The host accepts (journal.Dispatched) or refuses the request
//     (outcome rejected: nothing ran). A command audited as started and
//     then not sent (rejected, or failed to start: the session could not
//     be opened, the command wrapped, or its client left) has that end
//     audited too (command_ended, with its outcome).
//  4. Bytes are relayed both ways: stdin's EOF is passed on as a
//     half-close; window changes, signals and breaks go up (the
//     session's requests are read from the moment its command comes:
//     while its card waits, a window change is kept for the command and
//     a signal or break is refused); stdout and
//     stderr come down. A client that goes away does not end the command:
//     the relay keeps reading its output (a command blocked on a full
//     window would never exit) and closes its stdin, so the real end is
//     still observed. A session with a terminal is hung up instead, as
//     sshd hangs up the terminal of a connection that drops (the relay
//     closes the channel: sshd releases the terminal, the kernel sends
//     SIGHUP, and sshd still sends how the command ended).
//  5. When the host closes the channel, the rest of its output is read
//     (it is in the bastion already, within the channel's window: a
//     client that reads slowly, or not at all, does not hold the end
//     back), the end is written (journal.End: exited with a status or
//     signaled, with byte counts, the last 4 KiB of output and whether
//     the client was gone) and audited (command_ended); the client then
//     gets the rest of the output, and only then the host's exit-status
//     or exit-signal, byte for byte, then EOF and close. The host's EOF
//     is held until then, so that the bastion can still write to stderr.
//
// # What the client sees
//
// The host's own exit status or signal, when it was observed. Otherwise
// postern's, with a line on stderr starting "postern: " that names the
// journal entry:
//
//	254 (ExitDenied)       refused by policy, approval or the retry guard: not sent
//	255 (ExitUnreachable)  the host could not be reached, trusted or logged in to, the
//	                       decision could not be made (a decision for want of descriptors or
//	                       memory, the audit log or the journal: undecided), or the command
//	                       could not be journaled, audited or wrapped: not sent
//	no status              the outcome is unknown; ssh exits 255
//
// A request the host refused fails as it would without the bastion.
//
// # Unknown outcomes
//
// An outcome that was not observed is unknown (journal.MarkUnknown,
// audit event command_unknown), for one of five reasons:
//
//	dispatch_unconfirmed  the request went out and the connection failed before its answer
//	upstream_lost         the channel ended without a status, and the connection did
//	                      not answer a keepalive within 3 seconds
//	bastion_restarted     journal.Open found an entry a previous instance left running
//	                      (audited when the next gateway starts: RecordRestarted)
//	bastion_stopped       Server.Stop cut the command off after the gateway's grace period
//	no_status             the host closed the channel without an exit status or signal, on
//	                      a connection that still answers: a relay on the host that lost
//	                      its own connection, or a bastion such as this one, says so of an
//	                      outcome it does not know
//
// Keepalives go to the host every Config.Keepalive (15s); three missed
// close the connection, so a silently dropped network ends as
// upstream_lost instead of hanging. The bastion never retries an unknown
// command. An identical one (same verified host key, user, kind and
// command bytes: never the name or port the host was reached by) asks the
// decision with the earlier entry on the card, once the host key is
// verified and before anything is signed; refused, it is not sent and not
// journaled, and the earlier entry keeps guarding; approved, the new
// entry records RetryOf. An approval covers one retry: of identical
// retries approved at once, the first journaled is sent, and the others
// are refused by the guard (254), not sent and not journaled.
//
// # Bounds, refusals and stopping
//
// Config.Limits bounds each user's connections (a connection is idle, and
// may be pushed out, only until its preamble is read). Refuse answers a
// client that no bastion can serve (the gateway's journal is damaged),
// within the same bound.
// RetireJournal closes the bastion's journal to commands, for a journal a
// person replaces ("postern journal new"), only once every command
// journaled through it has recorded its end there; a command that comes
// after is refused.
// Hold makes the bastion send no command and probe no host from then on,
// on the connections it serves already too, for a gateway whose approved
// configuration no longer approves the one the bastion started from.
// Stop ends the bastion for a stopping gateway: new commands are refused,
// running ones get a grace period, then are cut off (the connections to
// the hosts first) and recorded unknown (bastion_stopped), their clients
// told so before their connections are closed.
//
// # The journal's states
//
// Each entry has one of the statuses of package journal:
//
//	RUNNING                                  written, no end yet
//	COMPLETED                                exited or signaled; or resolved "ran"
//	RETRY_SAFE previous_action_not_started   denied, failed_to_start or rejected; or resolved "not_started"
//	STATUS_UNKNOWN inspect_activity_journal  unknown (or closed_no_status, which earlier versions wrote),
//	                                         and not resolved to one of the above
//
// Server.Resolve turns an unknown entry that ran with markers into a
// resolution: it runs marker.Probe over a fresh connection, approved like
// any use of a key, refuses to trust the markers if the host key changed,
// and records what marker.ParseProbe reads (audit event
// command_resolved). Server.ResolveByHand records what a person found.
package bastion
