package confine

const (
	nativeArch  = 0xc00000b7 // AUDIT_ARCH_AARCH64
	nativeIoctl = 29
	compatArch  = 0x40000028 // AUDIT_ARCH_ARM
	compatIoctl = 54
)

// The keyring system calls add_key, request_key and keyctl, by native
// and compat numbers.
var (
	nativeKeyring = []uint32{217, 218, 219}
	compatKeyring = []uint32{309, 310, 311}
)
