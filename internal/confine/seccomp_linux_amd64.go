package confine

const (
	nativeArch  = 0xc000003e // AUDIT_ARCH_X86_64
	nativeIoctl = 16
	compatArch  = 0x40000003 // AUDIT_ARCH_I386
	compatIoctl = 54
)
