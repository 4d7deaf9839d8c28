package gateway

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/syncbuf"
)

// A gateway a dynamic loader started says so in its status, for doctor
// to tell the person, and warns in its log of each variable that named
// libraries for that loader where it started: they ran in it. One
// static program says nothing of the variables, which mean nothing to
// it.
func TestAGatewayTellsOfItsLoader(t *testing.T) {
	for _, loader := range []string{"/lib64/ld-linux-x86-64.so.2", ""} {
		dir := gatewayHome(t)
		t.Setenv("LD_PRELOAD", "/tmp/run/evil.so")
		defer func(old func() (string, error)) { selfInterpreter = old }(selfInterpreter)
		selfInterpreter = func() (string, error) { return loader, nil }
		var log syncbuf.Buffer
		_, sock, stop := runGatewayWith(t, dir, Options{Log: slog.New(slog.NewTextHandler(&log, nil))})
		st, err := api.NewClient(sock).Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		stop()
		warned := strings.Contains(log.String(), "linked dynamically") && strings.Contains(log.String(), "variable=LD_PRELOAD value=/tmp/run/evil.so")
		if st.Interpreter != loader || warned != (loader != "") {
			t.Errorf("started by %q: status names %q, warned %v:\n%s", loader, st.Interpreter, warned, log.String())
		}
	}
}
