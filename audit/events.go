package audit

import "time"

// Event is one audited fact. Fields that do not apply stay empty.
type Event struct {
	// Seq is the event's record number. Readers set it; Append ignores it.
	Seq        uint64    `json:"seq,omitempty"`
	Type       EventType `json:"type"`
	Time       time.Time `json:"time"`
	BootID     string    `json:"boot_id,omitempty"`
	PrevBootID string    `json:"prev_boot_id,omitempty"`
	VaultEpoch uint64    `json:"vault_epoch"`
	Run        string    `json:"run,omitempty"`
	Grant      string    `json:"grant,omitempty"`
	Card       string    `json:"card,omitempty"`
	Reason     Reason    `json:"reason,omitempty"`
	// Key is the SHA256 fingerprint of the SSH key used or asked for.
	Key string `json:"key,omitempty"`
	// Dest is the SHA256 fingerprint of the verified destination host key;
	// DestNames are its names in the host inventory.
	Dest       string   `json:"dest,omitempty"`
	DestNames  []string `json:"dest_names,omitempty"`
	Forwarding bool     `json:"forwarding,omitempty"`
	Mode       Mode     `json:"mode,omitempty"`
	Approver   string   `json:"approver,omitempty"`
	Label      string   `json:"label,omitempty"`
	// Process holds the identity facts the gateway used for the run.
	Process *Process `json:"process,omitempty"`
	// Detail carries extensions (bastion command start, end, unknown,
	// resolution; policy versions; recovery facts).
	Detail map[string]string `json:"detail,omitempty"`
}

// Process is the identity evidence of one OS process.
type Process struct {
	PID         int       `json:"pid"`
	Start       time.Time `json:"start,omitzero"`
	StartTicks  uint64    `json:"start_ticks,omitempty"` // kernel start time, clock ticks since boot
	Exe         string    `json:"exe,omitempty"`
	ExeSHA256   string    `json:"exe_sha256,omitempty"` // hex prefix of the executable's SHA-256
	Signer      string    `json:"signer,omitempty"`
	UID         int       `json:"uid"`
	PPID        int       `json:"ppid,omitempty"`
	ParentStart time.Time `json:"parent_start,omitzero"`
}
