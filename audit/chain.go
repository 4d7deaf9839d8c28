package audit

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"filippo.io/edwards25519"
	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/crypto/curve25519"
)

// Version 2 seals entries with a key chain instead of one anonymous box
// per entry. A chain starts from one ephemeral X25519 key e:
//
//	shared  := X25519(e, recipient)          (e is erased at once)
//	chain_0 := SHA-256("postern-audit/v2/chain\x00" ‖ shared ‖ epk ‖ recipient)
//	key_n   := SHA-256("postern-audit/v2/key\x00" ‖ chain_n)
//	chain_n+1 := SHA-256("postern-audit/v2/next\x00" ‖ chain_n)
//	summary := SHA-256("postern-audit/v2/summary\x00" ‖ chain_0)
//
// Entry n of the chain is sealed with ChaCha20-Poly1305 under key_n (a
// key used once, so the nonce is zero). The writer keeps only chain_n for
// the next entry and erases each key after use, so it cannot open an entry
// it has written: it stays write-blind. The expensive part, the two X25519
// multiplications, is done ahead of time off the signing path; sealing an
// entry costs two hashes and one AEAD.
const (
	chainDomain   = "postern-audit/v2/chain\x00"
	keyDomain     = "postern-audit/v2/key\x00"
	nextDomain    = "postern-audit/v2/next\x00"
	summaryDomain = "postern-audit/v2/summary\x00"
	// chainMax is the most entries the writer seals with one chain; a new
	// chain also starts with the first entry after every checkpoint, so a
	// reader can begin decrypting at any checkpoint. A reader refuses an
	// entry at a later position: it bounds how far a reader ratchets for
	// one entry of a crafted log (anyone can seal to the recipient).
	chainMax = 1024
	// entryV2Overhead is the ephemeral public key, the position in the
	// chain and the AEAD tag.
	entryV2Overhead = 32 + 4 + chacha20poly1305.Overhead
)

// chainSeed is the start of a chain: its ephemeral public key and chain_0.
type chainSeed struct {
	epk    [32]byte
	chain0 [32]byte
}

// newChainSeed draws an ephemeral key and derives chain_0 for recipient.
// The ephemeral public key is computed on the Edwards form of the curve
// (a fixed-base multiplication, several times faster than the ladder).
func newChainSeed(recipient *[32]byte) (*chainSeed, error) {
	var priv [32]byte
	if _, err := rand.Read(priv[:]); err != nil {
		return nil, err
	}
	defer clear(priv[:])
	sc, err := edwards25519.NewScalar().SetBytesWithClamping(priv[:])
	if err != nil {
		return nil, err
	}
	s := &chainSeed{}
	copy(s.epk[:], new(edwards25519.Point).ScalarBaseMult(sc).BytesMontgomery())
	shared, err := curve25519.X25519(priv[:], recipient[:])
	if err != nil {
		return nil, fmt.Errorf("derive an entry key: %w", err)
	}
	s.chain0 = deriveChain0(shared, s.epk, *recipient)
	clear(shared)
	return s, nil
}

func deriveChain0(shared []byte, epk, recipient [32]byte) [32]byte {
	h := sha256.New()
	h.Write([]byte(chainDomain))
	h.Write(shared)
	h.Write(epk[:])
	h.Write(recipient[:])
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// step derives a labelled value from a chain value.
func step(domain string, c *[32]byte) [32]byte {
	var b [64]byte
	n := copy(b[:], domain)
	n += copy(b[n:], c[:])
	out := sha256.Sum256(b[:n])
	clear(b[:])
	return out
}

// chain is a writer's position in a key chain.
type chain struct {
	epk     [32]byte
	n       uint32
	cur     [32]byte // chain_n
	summary [32]byte // the key for the checkpoint summary of this chain
}

func startChain(s *chainSeed) *chain {
	c := &chain{epk: s.epk, cur: s.chain0, summary: step(summaryDomain, &s.chain0)}
	clear(s.chain0[:])
	return c
}

// next returns the position and key of the next entry and moves on,
// erasing the chain value it came from.
func (c *chain) next() (n uint32, key [32]byte) {
	n = c.n
	key = step(keyDomain, &c.cur)
	nxt := step(nextDomain, &c.cur)
	c.cur = nxt
	clear(nxt[:])
	c.n++
	return n, key
}

func (c *chain) erase() {
	clear(c.cur[:])
	clear(c.summary[:])
}

// sealV2 seals a padded entry plaintext (see padEntry) with key at
// position n of the chain that starts at epk.
func sealV2(epk [32]byte, n uint32, key *[32]byte, pt []byte) ([]byte, error) {
	aead, err := chacha20poly1305.New(key[:])
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, entryV2Overhead+len(pt))
	out = append(out, epk[:]...)
	out = binary.BigEndian.AppendUint32(out, n)
	var nonce [chacha20poly1305.NonceSize]byte
	return aead.Seal(out, nonce[:], pt, nil), nil
}

// seedPool keeps chain seeds ready so that starting a chain on the signing
// path costs nothing: a goroutine refills it after each take.
type seedPool struct {
	recipient [32]byte
	ch        chan *chainSeed
	want      chan struct{}
	quit      chan struct{}
	done      chan struct{}
	once      sync.Once
}

func newSeedPool(recipient [32]byte) *seedPool {
	p := &seedPool{
		recipient: recipient,
		ch:        make(chan *chainSeed, 2),
		want:      make(chan struct{}, 1),
		quit:      make(chan struct{}),
		done:      make(chan struct{}),
	}
	go p.run()
	return p
}

func (p *seedPool) run() {
	defer close(p.done)
	for {
		for len(p.ch) < cap(p.ch) {
			s, err := newChainSeed(&p.recipient)
			if err != nil {
				break // take computes its own and reports the error
			}
			select {
			case p.ch <- s:
			case <-p.quit:
				clear(s.chain0[:])
				return
			}
		}
		select {
		case <-p.want:
		case <-p.quit:
			return
		}
	}
}

// take returns a ready seed, or computes one when none is ready.
func (p *seedPool) take() (*chainSeed, error) {
	var s *chainSeed
	select {
	case s = <-p.ch:
	default:
	}
	select {
	case p.want <- struct{}{}:
	default:
	}
	if s != nil {
		return s, nil
	}
	return newChainSeed(&p.recipient)
}

// close stops the goroutine and erases the seeds it kept.
func (p *seedPool) close() {
	p.once.Do(func() {
		close(p.quit)
		<-p.done
		for {
			select {
			case s := <-p.ch:
				clear(s.chain0[:])
			default:
				return
			}
		}
	})
}

// chainReader opens version 2 entries with the recipient's identity. It
// keeps the chain of the last entry opened, so that reading a chain in
// order costs one X25519 per chain and two hashes per entry.
type chainReader struct {
	identity  [32]byte
	recipient [32]byte
	have      bool
	epk       [32]byte
	chain0    [32]byte
	pos       uint32
	cur       [32]byte
	pt        []byte // the last plaintext, overwritten by the next open
}

var errEntryFormat = errors.New("malformed version 2 entry")

// use makes the chain that starts at epk the current one.
func (r *chainReader) use(epk [32]byte) error {
	if r.have && r.epk == epk {
		return nil
	}
	shared, err := curve25519.X25519(r.identity[:], epk[:])
	if err != nil {
		return fmt.Errorf("the entry's ephemeral key is unusable: %w", err)
	}
	r.chain0 = deriveChain0(shared, epk, r.recipient)
	clear(shared)
	r.epk, r.have, r.pos, r.cur = epk, true, 0, r.chain0
	return nil
}

// keyFor returns the key of entry n of the chain that starts at epk.
func (r *chainReader) keyFor(epk [32]byte, n uint32) ([32]byte, error) {
	if n >= chainMax {
		return [32]byte{}, fmt.Errorf("%w: position %d in its key chain is beyond %d", errEntryFormat, n, chainMax-1)
	}
	if err := r.use(epk); err != nil {
		return [32]byte{}, err
	}
	if n < r.pos {
		r.pos, r.cur = 0, r.chain0
	}
	for r.pos < n {
		r.cur = step(nextDomain, &r.cur)
		r.pos++
	}
	return step(keyDomain, &r.cur), nil
}

// summaryKey returns the summary key of the chain that starts at epk.
func (r *chainReader) summaryKey(epk [32]byte) ([32]byte, error) {
	if err := r.use(epk); err != nil {
		return [32]byte{}, err
	}
	return step(summaryDomain, &r.chain0), nil
}

// open decrypts a version 2 entry payload. The plaintext is valid until the
// next call.
func (r *chainReader) open(ct []byte) ([]byte, error) {
	if len(ct) < entryV2Overhead {
		return nil, errEntryFormat
	}
	epk := [32]byte(ct[:32])
	n := binary.BigEndian.Uint32(ct[32:36])
	key, err := r.keyFor(epk, n)
	if err != nil {
		return nil, err
	}
	pt, err := openOnce(&key, ct[36:], nil, r.pt[:0])
	if err != nil {
		return nil, errors.New("the ciphertext does not open with this identity: wrong identity, or the ciphertext was altered")
	}
	r.pt = pt
	return pt, nil
}

// openOnce opens ct sealed with ChaCha20-Poly1305 under a key used once
// (nonce zero), appending the plaintext to dst, and erases the key.
func openOnce(key *[32]byte, ct, ad, dst []byte) ([]byte, error) {
	defer clear(key[:])
	aead, err := chacha20poly1305.New(key[:])
	if err != nil {
		return nil, err
	}
	var nonce [chacha20poly1305.NonceSize]byte
	return aead.Open(dst, nonce[:], ct, ad)
}

func (r *chainReader) erase() {
	clear(r.pt[:cap(r.pt)])
	clear(r.identity[:])
	clear(r.chain0[:])
	clear(r.cur[:])
}
