package approvals

import (
	"reflect"
	"testing"
)

// postern sessions lists a grant's key as the card that approved it
// showed it: with a security key's touch and application, the upstream
// agent's hold and a certificate, where they apply, as
// postern-sessions(1) says.
func TestGrantListsItsKeyAsItsCardShowedIt(t *testing.T) {
	w := newWorld(t)
	w.key = Key{Fingerprint: "SHA256:key", Comment: "work", Type: "sk-ssh-ed25519-cert-v01@openssh.com", Touch: true, Upstream: true,
		Application: "ssh:work", Cert: &Cert{KeyID: "alice", Principals: []string{"alice", "deploy"}, CA: "SHA256:ca"}}
	d, c := w.approve(13)
	if !d.Allow {
		t.Fatalf("decision %+v", d)
	}
	_, grants := w.e.Sessions()
	if len(grants) != 1 {
		t.Fatalf("grants %+v", grants)
	}
	if !reflect.DeepEqual(grants[0].Key, c.Key) {
		t.Fatalf("grant %s lists its key as %+v, its card showed %+v", grants[0].ID, grants[0].Key, c.Key)
	}
}
