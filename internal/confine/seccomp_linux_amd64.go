package confine

const (
	nativeArch  = 0xc000003e // AUDIT_ARCH_X86_64
	nativeIoctl = 16
	compatArch  = 0x40000003 // AUDIT_ARCH_I386
	compatIoctl = 54
)

// The keyring system calls add_key, request_key and keyctl, by native
// and compat numbers.
var (
	nativeKeyring = []uint32{248, 249, 250}
	compatKeyring = []uint32{286, 287, 288}
)
