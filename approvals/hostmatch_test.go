package approvals

import "testing"

// Host rules match the inventory's names as ssh_config's Host patterns
// match a host: case, the port of "[host]:port" and the root's trailing
// dot aside, an address as the address it is.
func TestHostRuleMatchesANameInEachOfItsForms(t *testing.T) {
	for _, c := range []struct {
		glob, name string
		ok         bool
	}{
		{"Prod-*", "prod-db-1", true},
		{"127.0.0.1", "[127.0.0.1]:2222", true},
		{"127.0.0.*", "[127.0.0.1]:2222", true},
		{"[127.0.0.1]:2222", "[127.0.0.1]:2222", true},
		{"*.example.com", "db.example.com.", true},
		{"db.example.com.", "db.example.com", true},
		{"*.example.com", "[db.example.com.]:2222", true},
		{"10.0.0.*", "::ffff:10.0.0.5", true},
		{"10.0.0.5", "[::FFFF:10.0.0.5]:22", true},
		{"::ffff:10.0.0.5", "10.0.0.5", true},
		{"::ffff:*", "::ffff:10.0.0.5", true},
		{"::1", "0:0:0:0:0:0:0:1", true},
		// Another host, or another port where the rule names one.
		{"[127.0.0.1]:2222", "127.0.0.1", false},
		{"[127.0.0.1]:2222", "[127.0.0.1]:2223", false},
		{"10.0.0.5", "[10.0.0.50]:22", false},
		{"db.example.com", "db.example.com.evil", false},
		{"db", "[db]:x", false},
		{".", "a", false},
	} {
		if got := anyMatch(c.glob, []string{c.name}); got != c.ok {
			t.Errorf("host %q ~ name %q: %v, want %v", c.glob, c.name, got, c.ok)
		}
	}
}
