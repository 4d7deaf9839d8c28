package gateway

import (
	"os"
	"testing"
)

// Status says the gateway runs on the defaults only when it does: it
// started with no file and put none in force since. A file removed while
// the gateway runs leaves that file's policy in force, before the reload
// the removal brings and after it, so "the defaults" would be untrue.
func TestStatusSaysDefaultsOnlyWhenTheyAreInForce(t *testing.T) {
	dir := gatewayHome(t)
	g, _, stop := runGateway(t, dir)
	if st := g.Status(); !st.Config.Defaults {
		t.Fatalf("a gateway started with no file does not say it runs on the defaults: %+v", st.Config)
	}
	stop()

	p := configFile(t, dir)
	if err := os.WriteFile(p, []byte("approval = \"per-call\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g, _, _ = runGateway(t, dir)
	if st := g.Status(); st.Config.Defaults {
		t.Fatalf("a gateway started with a file says it runs on the defaults: %+v", st.Config)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if st := g.Status(); st.Config.Defaults || st.Config.Approval != "per-call" {
		t.Fatalf("with its file removed, the gateway says %+v", st.Config)
	}
	g.reloadConfig()
	if st := g.Status(); st.Config.Defaults || st.Config.Approval != "per-call" || st.Config.Error == "" {
		t.Fatalf("with its file removed and reloaded, the gateway says %+v", st.Config)
	}
}
