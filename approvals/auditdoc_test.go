package approvals

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/postern/postern/audit"
)

// postern-audit(1) names what the events about a request carry in their
// detail, and every word a script reading --json finds there: the
// purpose (a login, an SSHSIG signature such as a git commit's, data the
// agent could not interpret), the SSHSIG namespace, and the channel the
// request came through.
func TestAuditManNamesWhatARequestIsRecordedAs(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "man", "postern-audit.1"))
	if err != nil {
		t.Fatal(err)
	}
	r := requestEvent("sign", &Request{Purpose: PurposeSSHSig, Namespace: "git", MessageHash: "sha512:00", Channel: Channel{Kind: ChannelRun, Run: "R1"}}, Decision{})
	var words []string
	for k := range r.Detail {
		words = append(words, k)
	}
	for _, p := range []Purpose{PurposeAuth, PurposeSSHSig, PurposeOther} {
		words = append(words, string(p))
	}
	for _, c := range []ChannelKind{ChannelAgent, ChannelRun, ChannelBastion} {
		words = append(words, string(c))
	}
	for _, w := range words {
		if !regexp.MustCompile(`Li ` + regexp.QuoteMeta(w) + `(\s|$)`).Match(page) {
			t.Errorf("postern-audit(1) does not name %q, which a request's events carry", w)
		}
	}
}

// The record of an SSHSIG signature names what was signed, as far as the
// agent knows it: the hash of the message, by algorithm, which the
// person can compute again of a commit or a file to tell whether it is
// the one signed.
func TestSignatureRecordNamesTheMessageHash(t *testing.T) {
	r := &Request{Purpose: PurposeSSHSig, Namespace: "git", MessageHash: "sha512:00ff"}
	for _, typ := range []string{"card_shown", "sign", "action_denied"} {
		if ev := requestEvent(audit.EventType(typ), r, Decision{}); ev.Detail["message_hash"] != "sha512:00ff" {
			t.Errorf("%s records %v, without the message's hash", typ, ev.Detail)
		}
	}
}
