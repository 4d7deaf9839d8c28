package vault

import (
	"fmt"
	"time"

	"golang.org/x/crypto/argon2"

	"github.com/postern/postern/internal/hugepages"
)

// Params are the Argon2id cost parameters of a vault. They are stored in
// the vault header and authenticated with it.
type Params struct {
	Time    uint32 // passes over the memory
	Memory  uint32 // memory in KiB
	Threads uint8  // lanes (parallelism)
}

// The floor is RFC 9106's second recommended option. Nothing below it is
// ever written or read. The ceilings bound the work a (possibly
// hostile) header can ask of the machine that opens it.
const (
	floorTime    = 3
	floorMemory  = 64 << 10 // 64 MiB
	floorThreads = 4

	maxTime    = 32
	maxMemory  = 1 << 20 // 1 GiB
	maxThreads = 64
)

// FloorParams returns the weakest parameters postern accepts: t=3,
// m=64 MiB, p=4 (about a quarter of a second on a small 2-core machine).
func FloorParams() Params {
	return Params{Time: floorTime, Memory: floorMemory, Threads: floorThreads}
}

// Validate reports whether p is within the floor and the ceilings
// (t ≤ 32, m ≤ 1 GiB, p ≤ 64).
func (p Params) Validate() error {
	switch {
	case p.Time < floorTime || p.Memory < floorMemory || p.Threads < floorThreads:
		return fmt.Errorf("kdf parameters %v are below the floor %v", p, FloorParams())
	case p.Time > maxTime || p.Memory > maxMemory || p.Threads > maxThreads:
		return fmt.Errorf("kdf parameters %v exceed the limits (t=%d, m=%d MiB, p=%d)",
			p, maxTime, maxMemory>>10, maxThreads)
	}
	return nil
}

// String formats p as "argon2id t=3 m=64MiB p=4".
func (p Params) String() string {
	if p.Memory%1024 == 0 {
		return fmt.Sprintf("argon2id t=%d m=%dMiB p=%d", p.Time, p.Memory>>10, p.Threads)
	}
	return fmt.Sprintf("argon2id t=%d m=%dKiB p=%d", p.Time, p.Memory, p.Threads)
}

// deriveKEK turns a passphrase into the key-encryption key. It is a
// variable so that tests exercising the file format can swap in a cheap
// function; production code never changes it.
var deriveKEK = func(passphrase, salt []byte, p Params) []byte {
	defer hugepages.Allow()()
	return argon2.IDKey(passphrase, salt, p.Time, p.Memory, p.Threads, keySize)
}

// measureKDF times one derivation with p. A variable for tests.
var measureKDF = func(p Params) time.Duration {
	var pass, salt [16]byte
	defer hugepages.Allow()()
	start := time.Now()
	k := argon2.IDKey(pass[:], salt[:], p.Time, p.Memory, p.Threads, keySize)
	d := time.Since(start)
	clear(k)
	return d
}

// Calibrate returns parameters for which one derivation takes about
// target on this machine, never below FloorParams. It times one
// derivation at the floor; if that is faster than target it raises the
// memory in proportion (rounded down to whole MiB, at most 1 GiB), and
// only when the memory is at its 1 GiB ceiling does it time a second
// derivation and raise the number of passes (at most 32). The threads stay
// at 4. A target of zero or less returns the floor without measuring.
//
// Calibrate allocates what it measures: up to 1 GiB for long targets. Run
// it once, when a vault is created or its passphrase changed; the result is
// stored in the vault header.
func Calibrate(target time.Duration) Params {
	p := FloorParams()
	if target <= 0 {
		return p
	}
	d := measureKDF(p)
	if d <= 0 {
		d = time.Nanosecond
	}
	if d >= target {
		return p
	}
	m := float64(p.Memory) * float64(target) / float64(d)
	if m >= maxMemory {
		p.Memory = maxMemory
	} else {
		p.Memory = max(uint32(m)&^1023, floorMemory)
		return p
	}
	d = measureKDF(p)
	if d <= 0 {
		d = time.Nanosecond
	}
	if d >= target {
		return p
	}
	t := float64(p.Time) * float64(target) / float64(d)
	switch {
	case t >= maxTime:
		p.Time = maxTime
	default:
		p.Time = max(uint32(t), floorTime)
	}
	return p
}
