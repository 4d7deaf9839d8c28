package confine

const (
	nativeArch  = 0xc00000b7 // AUDIT_ARCH_AARCH64
	nativeIoctl = 29
	compatArch  = 0x40000028 // AUDIT_ARCH_ARM
	compatIoctl = 54
)
