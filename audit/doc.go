// Package audit keeps postern's audit log: an append-only, write-blind,
// hash-chained record of every authority change and action, sealed by
// forward-secure signed checkpoints, that anyone can verify offline without
// a key.
//
// # Roles and files
//
// NewSetup makes the keys of a log in the state directory:
//
//	audit.key        the current checkpoint signing key (and the next one), 0600
//	audit.pin        pk0, the first checkpoint key, as "postern-audit+<base64>"
//	audit.recipient  the X25519 recipient, as "postern-audit-recipient+<base64>"
//
// and returns the X25519 identity, which the caller keeps in the encrypted
// vault. The writer (Open, Append) holds only the recipient: it can add
// entries but cannot read them back. Verify needs no key at all; with pk0
// pinned it also proves the log is the one set up with that key.
// DecodeEvents, ReadLog and ReadEvents need the identity.
//
// # Format
//
// All integers are big-endian. A log is a sequence of frames:
//
//	frame  := len:u32 ‖ ^len:u32 ‖ body[len] ‖ link[32]
//	body   := type:u8 ‖ seq:u64 ‖ prev[32] ‖ payload
//	link   := SHA-256("postern-audit/v1/link\x00" ‖ body)
//
// len is the body length, 41 ≤ len ≤ 65536 (a hard cap: no reader allocates
// more for a record); the second word is its bitwise complement, so a
// damaged length field is told apart from a record a crash cut short. seq
// counts records from 0 with no gaps; prev is the link of the record before
// (32 zero bytes for record 0). The link both checksums the frame and chains
// it: changing, removing, inserting or reordering any record breaks the
// chain at that record.
//
// Record 0 is the header (type 1), 102 bytes of payload:
//
//	"POSTERN-AUDIT" ‖ version:u8 ‖ log id[16] ‖ created:u64 (unix ns)
//	‖ pk0[32] (Ed25519) ‖ recipient[32] (X25519)
//
// Record 1 is always checkpoint epoch 0, written together with the header.
//
// Version 1 (read, and continued, but no longer started) keeps the frames
// in one file, appended to. Version 2 keeps them in segments: the log's
// path is segment 0 and segment i is "<path>.%06d". Each segment is made at
// its full size (1 MiB, doubling up to 32 MiB), filled with zeros and
// synced before it is needed, and records are written over the zeros, so a
// durable append changes no file size or block map: one write and one
// fdatasync. Zero bytes after a segment's records are free space. A version
// 1 log is continued in version 2 segments after its file, which is not
// written again.
//
// An entry (type 2) carries one event:
//
//	plaintext := log id[16] ‖ seq:u64 ‖ n:u32 ‖ event JSON[n] ‖ zeros
//
// zero-padded to a multiple of 256 bytes, so that sizes do not give event
// kinds away. The log id and seq inside the ciphertext let a reader with the
// identity detect an entry moved from another position or another log. In
// version 1 the payload is nacl/box.SealAnonymous(recipient, plaintext) (48
// bytes of overhead), one X25519 key agreement per entry on the signing
// path. In version 2 (and in the segments that continue a version 1 log) it
// is
//
//	epk[32] ‖ k:u32 ‖ ChaCha20-Poly1305(key_k, nonce 0, plaintext)   (52 bytes of overhead)
//
// where key_k is entry k of a key chain started from an ephemeral X25519
// key whose public half is epk (see chain.go): each key is derived from the
// one before by hashing, and the writer erases each as soon as it sealed
// its entry, so it stays write-blind. Chains are started ahead of time off
// the signing path, and a new chain starts with the first entry after
// every checkpoint (and every 1,024 entries), so that a reader can decrypt
// from any checkpoint on; a reader refuses an entry at a later position
// (k ≥ 1024), which would only make it hash for nothing. Verify checks
// only the ciphertext size (48 + k·256 or 52 + k·256, k ≥ 1).
//
// A checkpoint (type 3) has a payload of at least 116 bytes:
//
//	epoch:u64 ‖ time:u64 (unix ns) ‖ next pk[32] ‖ max unsealed:u32 ‖ sig[64] ‖ summary
//	sig := Ed25519(sk_epoch, domain ‖ log id ‖ epoch ‖ seq ‖ prev ‖ time ‖ next pk
//	       ‖ max unsealed [‖ SHA-256(summary)])
//
// where seq and prev are the checkpoint record's own, so the signature covers
// the chain head at its position, and with it every record before. In
// version 1 the domain is "postern-audit/v1/checkpoint\x00" and there is no
// summary; in version 2 it is "postern-audit/v2/checkpoint\x00" and the
// summary, sealed to the recipient (summary.go), lists the runs and the time
// span of the entries the checkpoint seals, so that a reader can skip the
// stretches of the log that do not concern it without decrypting them.
//
// # Checkpoints and the key chain
//
// Checkpoint k is signed by key k and commits to the public half of key k+1;
// key 0 is pk0 from the header (and the pin). Epochs are counters from 0 with
// no gaps, never wall-clock periods, and each signature is bound to its
// epoch, so a checkpoint cannot be dropped, reordered or re-signed with
// another epoch's key without verification failing at it. Max unsealed is the
// writer's promise to checkpoint again before more entries than that follow
// (Config.CheckpointEvery; 0 means no count limit); Verify fails a log that
// breaks it. This makes "unsealed where sealing was expected" a finding,
// rather than a log whose checkpoints were stripped passing as merely
// unsealed.
//
// The writer checkpoints at Open (a new log; entries a crash left unsealed;
// a changed policy), every CheckpointEvery entries, after CheckpointInterval
// with entries waiting, on Checkpoint and on Close. Checkpoint times never go
// backwards: when the clock steps back, the previous time is reused.
//
// The key file holds the current key k and the next key k+1 (90 bytes:
// "POSTERN-AUDIT-KEY" ‖ version:u8 (1) ‖ k:u64 ‖ seed of key k[32] ‖ seed of
// key k+1[32]); Open refuses it when others can read it. A checkpoint is
// appended and synced first; then the key file is replaced atomically (temp
// file, fsync, rename, fsync of the directory) by one holding k+1 and a fresh
// k+2, and key k is erased from memory. Key k+1 is therefore on disk before
// the checkpoint that commits to it, and a crash at any point leaves a key
// file that continues the chain: Open advances a key file one step behind
// the log. Residual risk: whoever can read the key file (the same uid) holds
// the current key and can sign future checkpoints, sealing a rewritten or
// extended tail after the last checkpoint; no such key can re-sign a
// checkpoint already written, so history up to the last checkpoint stays
// sealed. The file system may keep the blocks of replaced key files until
// they are reused.
//
// # Writing
//
// Open takes an exclusive flock for the life of the Log (a second writer gets
// ErrLocked) and verifies the log from the segment of its last checkpoint
// on: that the records chain, that checkpoints after the first one there
// verify under the keys they commit to, and that the last one commits to
// the key in the key file. It does not read the whole log; full
// verification is Verify's, offline. It refuses to go on when the part it
// reads is damaged before its last write (ErrDamaged; nothing is changed,
// and the caller decides whether to move the log aside), and, given anchors
// of the log (Config.Anchors), when it ends before one or holds another
// record where one names a record it reads (ErrDamaged and
// ErrBehindAnchor): an older copy put back. Log.Found is its end as Open
// found it, before what Open added, and Log.Holds tells whether it held an
// anchor learnt later. A torn last write
// is copied to "<file>.torn-<offset>" and cleared (cut from a version 1
// file, zeroed in a segment), and an EventLogRecovered entry records it.
//
// Append returns only once the record is durable (write and fdatasync):
// intent before effect. Concurrent Appends seal their events in parallel and
// share one write and one fdatasync (group commit); each still gets its own
// error. The appender that writes a batch leads the group commit; once its
// batch is durable it hands the lead to the next waiting appender (or to a
// goroutine of its own) and returns to its caller. Start takes the
// record's place in the log at once and makes it durable on another
// goroutine, so that the caller can prepare the action meanwhile (the
// agent has a token sign while the record syncs); Enter writes the record
// in the caller's goroutine when no write is under way and otherwise
// queues it for the next (the agent has a key in memory sign while it
// waits); Pending.Wait says when the record is durable, and the action
// must not take effect before. A caller that can start its action without
// waiting for it (the agent sends a request to an upstream agent, whose
// answer comes later) appends after starting it instead, with no hand-off
// to another goroutine. Before each write the writer checks, with a stat
// that asks for no file times (one that did would make every write dirty
// the inode), that the segment still has the size it was made with, is
// still the file at its path (not a link to it), still ends in the link of
// the last record it wrote there, and holds zeros where the next record
// goes; if another process wrote, truncated, replaced or removed it, or
// zeroed or changed that record, nothing more is written. It does not
// read back the records before that one: a block of them zeroed within a
// write's length of the end reads to Verify as a torn write, and what
// follows, the writer's later records too, as what a crash left (an
// anchor past it tells). Any write, sync
// or key-file failure makes the Log refuse every later Append and Checkpoint
// until it is reopened. All Append errors wrap ErrNotRecorded: the caller must
// deny the action the event describes.
//
// A record whose Append returned an error may still be in the file (a sync
// that failed after the data reached the disk, a crash before the caller was
// told): an entry shows that an action was requested and recorded, not that
// it ran. An Append that returned nil is in the file unless the file was
// tampered with.
//
// # What Verify checks, and what it cannot prove
//
// Verify checks framing and the length cap, seq contiguity, every link, the
// header (and pk0 against a pin), that the header is sealed at once, every
// checkpoint signature along the key chain, contiguous epochs, that each
// checkpoint signs the chain head at its position, non-decreasing checkpoint
// times, the committed unsealed limit, entry ciphertext sizes, and any
// anchors given. It reports the first bad record by seq and byte offset.
//
// Bytes after the last good record are a torn tail, a crash, reported as a
// warning, when they are the start of a record that was never finished: fewer
// bytes than its intact length field announces, optionally followed by zero
// bytes to the end of the file that begin on a 512-byte boundary or run for
// at least 32 bytes (what a file system may leave where a power failure lost
// written data). In a version 2 segment, where a write lands over zeros, a
// power failure can also leave the later blocks of a write on disk and an
// earlier one not: bytes after the records that all lie within one write's
// length (1 MiB and a record) and include an all-zero 512-byte block before
// the last of them are a torn write too; nothing may follow it in a later
// segment. Anything else is a failure, including a complete last record
// whose link does not match: a crash cannot produce one, and excusing it would
// let anyone alter the final checkpoint undetected. Zeroing the end of the
// last record, or a block of it, reads as a crash; it hides no more than
// cutting the record off, which no offline check can see either. So does
// changing any byte of a last record whose link ends in a zero byte (one in
// 256) in a version 2 segment: zeros follow it there, and it reads as that
// record cut short. The record is dropped as torn, never accepted.
//
// A log may be verified or read while its writer appends to it. A write
// the reader meets in progress, a record half copied, is read again
// before it counts as torn or as damage, and a segment the writer went on
// into while the reader looked is read after the records it put at the
// end of the one before (see live.go): the reader sees the log as it was
// at some moment, never damage that is not there.
//
// Verify cannot prove:
//
//   - that nothing was cut from the end: a log cut back to any record, even to
//     an earlier checkpoint, verifies, unless a later chain head was anchored
//     elsewhere (Config.OnCheckpoint, Log.Head, VerifyOptions.Anchors);
//   - that entries after the last checkpoint are original: no signature covers
//     them, so anyone who can write the file can rewrite, drop or add them and
//     recompute the chain (the running writer notices a change at the end of
//     what it wrote, offline Verify cannot);
//   - that the log is the original one, unless pk0 is pinned: a wholly
//     replaced log with keys of its own verifies;
//   - that events are true: a checkpoint proves which key sealed the records,
//     not that the gateway told the truth; and a consistent rollback of the
//     log, the key file and every anchor looks like a restore from backup.
//
// The report lists these in CannotProve, with the numbers that apply.
//
// # Projections
//
// Sessions and Activity are pure functions over decrypted events: who was
// approved with which evidence and why each approval ended (an approval left
// open when its gateway boot changed ends with gateway_restarted), and a
// timeline of short lines such as
//
//	14:23:06 action_denied run=R31 key=SHA256:k reason=gateway_restarted
//
// Audit history explains what happened; it never restores a grant.
// SessionBook and Timeline do the same one event at a time, so that a log
// read with ReadLog is projected in memory that does not grow with it.
//
// ReadLog verifies the records in one goroutine and decrypts the entries
// that verified in batches on the other cores, handing the events to its
// caller in log order; a batch in flight is at most 512 records.
//
// # Vocabulary
//
// The package declares postern's words once, typed: [EventType] for what
// an event records, [Reason] for why (end, decision, card and epoch change
// reasons), [Mode] for how much approval a use needs. The approval engine,
// the agent, the bastion and the gateway use these; the strings are the
// log's format. A word renamed since a log was written is read through
// [Reason.Canonical] (the end reason vault_changed is today's
// vault_state_changed).
package audit
