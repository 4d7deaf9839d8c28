package xdg

// The files of the state directory ($XDG_STATE_HOME/postern). Every
// package that keeps a file there takes its name from this table.
const (
	// VaultFile holds the encrypted keys (internal/vault). The vault
	// commands change it; a running gateway notices and moves its epoch.
	VaultFile = "vault"
	// EpochFile holds the last vault epoch, so that epochs never repeat
	// across restarts.
	EpochFile = "epoch"
	// BootIDFile holds the boot id of the last gateway started, for the
	// gateway_restarted event.
	BootIDFile = "boot_id"
	// ContextFile keeps the display context of runs across a restart
	// (approvals); it grants nothing.
	ContextFile = "context.json"
	// HostsFile is the host inventory (internal/inventory): the names and
	// classes an approver gave host keys. Only the gateway writes it.
	HostsFile = "hosts.json"
	// JournalFile is the bastion's command journal (bbolt).
	JournalFile = "journal.db"
	// BastionCAFile and BastionHostKeyFile are the bastion's certificate
	// authority and host key; BastionKnownHostsFile trusts the authority
	// for ssh (postern ssh-config points ssh at it).
	BastionCAFile         = "bastion_ca"
	BastionHostKeyFile    = "bastion_host_key"
	BastionKnownHostsFile = "bastion_known_hosts"
	// AuditLogFile is the audit log. AuditKeyFile holds its current
	// checkpoint signing key (0600); AuditPinFile its first checkpoint
	// key and AuditRecipientFile the key entries are sealed to, both
	// public.
	AuditLogFile       = "audit.log"
	AuditKeyFile       = "audit.key"
	AuditPinFile       = "audit.pin"
	AuditRecipientFile = "audit.recipient"
	// AuditAnchorFile holds the chain head of the audit log's latest
	// checkpoint, to be copied elsewhere ("postern audit verify
	// --anchor").
	AuditAnchorFile = "audit.anchor"
	// AgentLogFile is where a detached agent logs.
	AgentLogFile = "agent.log"
	// ApprovedConfigFile is the last configuration in force that no
	// person had to approve or that a person approved: a file that
	// loosens authority against it waits for a policy change card, even
	// across a restart.
	ApprovedConfigFile = "approved-config.toml"
)
