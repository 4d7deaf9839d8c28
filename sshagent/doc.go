// Package sshagent implements the SSH agent protocol as OpenSSH 9 and 10
// use it, so that postern can replace ssh-agent on $SSH_AUTH_SOCK.
//
// # Protocol
//
// Requests are framed with this package's own limit ([MaxMessage], 256
// KiB) and parsed here, with wire structs and ssh.Unmarshal (wire.go,
// privkey.go): a larger, truncated or malformed message closes the
// connection or gets SSH_AGENT_FAILURE, never a panic or a hang. The agent
// answers every message of OpenSSH 10's agent: it lists identities; signs
// with Ed25519, ECDSA (P-256, P-384, P-521), RSA (SHA-1, or SHA-2 with the
// rsa-sha2-256/512 flags), DSA, FIDO keys (sk-ecdsa, sk-ed25519) through
// OpenSSH's ssh-sk-helper, and PKCS#11 keys through ssh-pkcs11-helper,
// with or without certificates (a key signs for its certificate and the
// reverse: the public halves are compared); adds identities with their
// constraints (lifetime, confirm, sk-provider@openssh.com,
// restrict-destination-v00@openssh.com, associated-certs-v00@openssh.com
// for PKCS#11); removes one or all; locks and unlocks (while locked only
// an empty list, UNLOCK and session-bind are answered); and answers the
// session-bind@openssh.com and query extensions, a failed one with
// SSH_AGENT_EXTENSION_FAILURE.
//
// # Providers
//
// Provider libraries (FIDO, PKCS#11) are never loaded in the gateway:
// OpenSSH's helpers load them in processes of their own, spoken to over a
// socketpair. Only a library whose resolved path matches the allow-list
// ([Server.Providers], ssh-agent's -P) is used, and never for a
// connection that attempted a session-bind (it came through ssh: the
// lesson of CVE-2023-38408).
//
// # Session binding
//
// OpenSSH's ssh sends session-bind@openssh.com after key exchange: the
// server's host key, the session identifier and the host's signature over
// it. The agent verifies the signature and records the binding on the
// connection, refusing inconsistent binds (a connection bound for
// authentication cannot be rebound; a session id cannot move to another
// key). A userauth request signed later must carry the most recent
// binding's session id. The verified host key is the destination the
// approval decision and the approval card see; what the client claims is
// never used for it.
//
// # Process identity
//
// Every connection's peer is admitted at accept by procid.Table.Admit,
// the one check all of the gateway's sockets share: identified from
// kernel evidence, pinned, and refused (and logged) when it runs as
// another user, root excepted. Before each request the peer is verified again — alive, same
// start time, same executable — and every byte of the request must have
// been written by that process (SCM_CREDENTIALS), so a socket inherited
// by a child or passed to another process is noticed and closed.
//
// # Connections
//
// A connection waiting for its next request holds no goroutine: once no
// request has come for a moment (two milliseconds, so that a client's
// requests in a row are served at once), it is parked (package park), and
// a goroutine starts to serve it when it becomes readable. Parked for a
// tenth of a second, it gives up its net.Conn and keeps a bare descriptor
// of its socket, and takes a net.Conn again when its next request comes
// (bare.go). An idle connection costs its socket and less than a
// kilobyte, so that thousands of ssh sessions, each holding one, cost the
// agent little. With
// [Server.Limits], each user's connections are bounded, and an idle one,
// parked or not, is ended to make room for a new client. A request, once
// its first byte has come, must arrive whole within thirty seconds.
//
// # Decisions
//
// Every signature goes through an [approvals.Decider]; this package only
// supplies the verified facts of the request, and a context that ends
// when the client hangs up while the decision waits for a person (on
// Linux even when the client sent the start of a next request first), or
// when the process that asked exits or runs another program. A key held by a device (a
// security key, a token) then waits for it, for [Server.TouchTimeout],
// without holding the keyring; a signature that arrives after a lock is
// dropped.
//
// # Upstream agent
//
// With [Server.Upstream], another agent's keys are listed beside the
// agent's own and gated like them: a signature with one of them is
// decided here and only then sent to the upstream agent, over a
// connection of the client's own to which its verified session bindings
// are passed on (upstream.go); its record is written while the upstream
// signs, and the signature passed on once the record is durable.
// ssh-add's adds and removes go there or are refused, as
// [UpstreamAgent.Changes] says.
//
// [PROTOCOL.agent]: https://github.com/openssh/openssh-portable/blob/master/PROTOCOL.agent
package sshagent
