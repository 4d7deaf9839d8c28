// Package vault keeps the user's SSH private keys, and a few named
// secrets of other packages, in one encrypted file.
//
// # The file
//
// A vault is a single file, by default $XDG_STATE_HOME/postern/vault
// (xdg.StateFile("vault")); callers pass the path. It has a cleartext
// header (magic "POSTERN-VAULT", format version, Argon2id parameters, salt,
// a random 16-byte vault ID, and public metadata such as the audit log's
// recipient key), a wrapped data key, and the encrypted body holding the
// keys and secrets. format.go and body.go give the byte layout (read and
// written with golang.org/x/crypto/cryptobyte); every length has a hard
// cap (header 64 KiB, body 16 MiB), so a damaged length never makes a
// reader allocate more. The code follows the same parts: seal.go wraps
// the data key and seals the body, file.go reads, locks and writes the
// file, vault.go opens and saves a Vault, contents.go holds its keys,
// secrets and metadata.
//
// # Keys and encryption
//
// The passphrase goes through Argon2id (salt 16 random bytes, parameters
// from the header) to a 32-byte key-encryption key (KEK). The KEK wraps a
// random 256-bit data-encryption key (DEK) with XChaCha20-Poly1305, and
// the DEK seals the body with XChaCha20-Poly1305. The whole header,
// magic included, is the associated data of both seals (the body's also
// covers the wrapped key), so any edit of it is detected when the vault is
// opened, with the passphrase or with the data key alone. Parameters are never below
// FloorParams (t=3, m=64 MiB, p=4): a file whose header asks for less is
// rejected as corrupt, so an attacker who can write the file cannot
// downgrade the KDF for the next save. Calibrate picks stronger parameters
// for this machine.
//
// # Using it
//
//	v, err := vault.Create(path, pass, vault.Calibrate(time.Second), meta, secrets)
//	v, err := vault.Open(path, pass)   // ErrWrongPassphrase, ErrCorrupt, ErrNotExist
//	k, err := vault.NewKey(priv, "me@laptop")
//	err = v.AddKey(k)                  // ErrDuplicateKey
//	err = v.Save()                     // ErrModified if someone else wrote the file
//	v.Wipe()                           // when locking
//
// Changes stay in memory until Save. ChangePassphrase re-seals and writes
// at once. ReadMeta returns the public metadata and the vault ID without
// the passphrase; they are not authenticated until the vault is opened.
//
// A running gateway keeps the vault's DataKey so that it can reload the
// file after another command changed it (OpenWithKey) without asking for
// the passphrase again; the same DataKey, exported, is what may be kept in
// the OS keychain (package keychain). ChangePassphrase rotates the data
// key, which makes every DataKey taken before useless (ErrStaleKey).
//
// # Writing safely
//
// Every write goes through package atomicfile: a temporary file (mode
// 0600, ".vault.RANDOM.tmp") in the vault's directory, synced, renamed
// over the vault, and the directory synced: a crash leaves either the old
// vault or the new one. Writers take an
// exclusive flock on the sibling file PATH.lock ("vault.lock"). Save
// compares the file on disk with the one this Vault read or last wrote
// (SHA-256 of the whole file) and refuses with ErrModified if they differ,
// rather than overwrite another writer's change. Create refuses any
// existing file at the path; nothing in this package ever overwrites a
// vault it could not read.
//
// Each save raises a generation counter in the body and records it
// beside the vault, in PATH.generation (anchor.go): Open refuses a vault
// older than the record with ErrRolledBack. Save removes the vault's
// temporary files an interrupted write left, under the writers' lock.
//
// # Wrong passphrases
//
// Open returns ErrWrongPassphrase as soon as the derivation is done; it
// never sleeps. Callers pause WrongPassphraseDelay(attempt) before asking
// again, so every front end follows one policy. A damaged header reports
// ErrCorrupt, not ErrWrongPassphrase: a check value derived from the KEK
// tells the two apart (it confirms a guess no better than the wrapped key
// itself does). Damage to the KDF parameters or the salt would change the
// derived key, and read as a wrong passphrase: so the header carries a
// check value of them ("kdf-check", kdfcheck.go), tested before the
// derivation, and their damage is ErrCorrupt too.
//
// # Importing keys
//
// ParsePrivateKeyFile reads what ssh-keygen writes (OpenSSH format, plain
// or passphrase-protected with any AES mode ssh-keygen -Z offers) and PEM
// PKCS#1, PKCS#8 and SEC 1 files, and recovers the comment of OpenSSH
// files, which golang.org/x/crypto/ssh drops: the container is read with
// ssh.Unmarshal into wire structs, as x/crypto reads it, and decrypted
// here (bcrypt_pbkdf and AES), because x/crypto decrypts only two of the
// modes and keeps no comment. Accepted: Ed25519, ECDSA P-256/P-384/P-521,
// RSA of 2048 bits or more. NewKey stores the key unencrypted in OpenSSH
// format inside the (encrypted) body.
//
// # Memory
//
// Passphrases, keys and secrets are handled as byte slices, never
// strings, and the package clears the buffers it owns (KEK, DEK, body
// plaintext, decrypted key files) as soon as they are no longer needed;
// Wipe clears the rest. This is best effort: the Go runtime may have
// copied a slice while growing a stack or moving data, Argon2id's working
// memory and the AEAD and HMAC states keep key-derived bytes until the
// garbage collector reuses them, encoding/pem and golang.org/x/crypto/ssh
// make copies while parsing (Key.PrivateKey, Key.Signer, imports), and
// decoded RSA and Ed25519 key objects hold values that cannot be wiped.
// Keep the process non-dumpable (prctl PR_SET_DUMPABLE 0) and without
// core dumps.
package vault
