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
// agent could not interpret), the SSHSIG namespace, the channel the
// request came through, and the destination's classes.
func TestAuditManNamesWhatARequestIsRecordedAs(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "man", "postern-audit.1"))
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t)
	prod := hostKey(t)
	w.nameHost("prod-db-1", "production", prod)
	var words []string
	for _, req := range []*Request{
		{Purpose: PurposeSSHSig, Namespace: "git", MessageHash: "sha512:00", Channel: Channel{Kind: ChannelRun, Run: "R1"}},
		{Purpose: PurposeAuth, Dest: &Destination{HostKey: prod}, Channel: Channel{Kind: ChannelRun, Run: "R1"}},
	} {
		for k := range w.e.requestEvent("sign", req, Decision{}).Detail {
			words = append(words, k)
		}
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
	w := newWorld(t)
	r := &Request{Purpose: PurposeSSHSig, Namespace: "git", MessageHash: "sha512:00ff"}
	for _, typ := range []string{"card_shown", "sign", "action_denied"} {
		if ev := w.e.requestEvent(audit.EventType(typ), r, Decision{}); ev.Detail["message_hash"] != "sha512:00ff" {
			t.Errorf("%s records %v, without the message's hash", typ, ev.Detail)
		}
	}
}

// The card_shown event of a signature records what its card showed of
// the message (its path, the directory it was signed in, its lines),
// which postern-audit(1) names: the record named only the hash, so a
// reader of the log could not tell which commit the person was asked
// about.
func TestSignatureCardRecordsTheMessageItShowed(t *testing.T) {
	w := newWorld(t)
	log := &eventLog{}
	w.e.SetAudit(log)
	r := w.req(13)
	r.Purpose, r.Namespace, r.MessageHash = PurposeSSHSig, "git", "sha512:00ff"
	r.Message = func() *SignedMessage {
		return &SignedMessage{Path: "/tmp/.git_signing_buffer_tmp1", Dir: "/home/u/src/repo", Size: 9, Head: []string{"author A <a@example.com> 1 +0000", "fix it"}}
	}
	ch := w.decide(r)
	c := w.card()
	w.answer(c.ID, VerdictDeny, 30)
	got(t, ch)
	log.mu.Lock()
	defer log.mu.Unlock()
	page, err := os.ReadFile(filepath.Join("..", "man", "postern-audit.1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range log.events {
		if ev.Type != audit.EventCardShown {
			continue
		}
		want := map[string]string{"message_path": "/tmp/.git_signing_buffer_tmp1", "message_dir": "/home/u/src/repo", "message_head": "author A <a@example.com> 1 +0000\nfix it"}
		for k, v := range want {
			if ev.Detail[k] != v {
				t.Errorf("card_shown records %s = %q, want %q", k, ev.Detail[k], v)
			}
			if !regexp.MustCompile(`Li ` + k + `(\s|$)`).Match(page) {
				t.Errorf("postern-audit(1) does not name %q", k)
			}
		}
		return
	}
	t.Fatal("no card_shown event")
}
