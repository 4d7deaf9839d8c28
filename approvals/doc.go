// Package approvals is postern's authority model: who may use which key,
// now. It knows nothing of wire protocols; the agent socket (sshagent) and
// the bastion ask the same [Engine] through [Decider].
//
// # Words
//
// A run is the process a session approval is about — usually the AI
// agent that spawns ssh and git, not the short-lived ssh itself. It is
// launched by "postern run" (the gateway inspects it after exec and mints a
// launch nonce), or chosen by the approver among the requester's live
// ancestors. A grant (session approval) binds one run, its launch nonce,
// the gateway's boot id, the vault epoch and one key (and one verified
// destination when the policy scopes sessions so). It lives in memory only
// and covers the run's live descendants. A per-call approval is for this
// one use. A card asks a person to decide.
//
// # Deciding
//
// The policy ([Policy], from postern.toml(5)) gives a request its mode:
// the strictest of the rules that match its verified destination names,
// key and executables, else the default. A forwarded connection never
// rides a session. A key added with ssh-add -c is asked about on every use.
//
//   - deny: refused; none: signed.
//   - session: signed when a live grant covers it. On every request the
//     engine checks, from live evidence, that the grant's run is still the
//     process approved (pidfd alive, same start time, same executable),
//     that its nonce, the boot id and the vault epoch still match, and that
//     the requester descends from the run (walking parents with start
//     times). Otherwise a card.
//   - per-call: a card, every time; a session never replaces it.
//
// While the vault is locked nothing is asked or queued: the request is
// refused at once (vault_locked). An answer given across a lock or unlock
// is refused (the epoch is checked again after the answer). A card that
// nobody answers within card_timeout refuses its request, and the run's
// next requests are refused without a card for card_cooldown; so are
// they once the run has withdrawn more cards than its pace allows, or
// had more denied (cardbounds.go). Requests that would ask the same
// session question wait on one card, and its timeout refuses them all.
// The card shows the request it was shown for: when that request goes,
// the card is withdrawn, and the others ask again on a card that shows
// one of them.
//
// # Cards and approvers
//
// A card shows the truth first: the run (executable name, path, hash
// prefix, pid, start), the requesting chain, the verified destination
// (host key fingerprint and known_hosts names), forwarding, the key, what
// the approval will cover, and what changed when it is a re-approval
// (REAUTH_REQUIRED process_changed, gateway_restarted,
// vault_state_changed), explained in a sentence from display context
// ([Past]) that is never turned back into authority. The client's claims
// (its command line, the account it names) come last, labelled as claims.
//
// Approvers answer through [Engine.Answer]; an answer from the requesting
// process, the chosen run, or any descendant of either is refused.
package approvals
