// Package sshagent implements the SSH agent protocol as OpenSSH 9.x uses
// it, so that postern can replace ssh-agent on $SSH_AUTH_SOCK.
//
// # Protocol
//
// Requests are parsed by golang.org/x/crypto/ssh/agent, one message at a
// time, after this package has framed them with its own limit
// ([MaxMessage], 256 KiB: a larger, truncated or malformed message closes
// the connection or gets SSH_AGENT_FAILURE, never a panic or a hang). The
// agent lists identities; signs with Ed25519, ECDSA (P-256, P-384, P-521)
// and RSA (SHA-1, or SHA-2 with the rsa-sha2-256/512 flags), including
// with certificates; adds identities with their constraints (lifetime,
// confirm, and restrict-destination-v00@openssh.com hops, enforced as
// ssh-agent enforces them); removes one or all; locks and unlocks; and
// answers the session-bind@openssh.com and query extensions.
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
// # Decisions
//
// Every signature goes through an [approvals.Decider]; this package only
// supplies the verified facts of the request.
//
// [PROTOCOL.agent]: https://github.com/openssh/openssh-portable/blob/master/PROTOCOL.agent
package sshagent
