package gateway

import (
	"os"

	"github.com/postern/postern/internal/harden"
)

// noteLoader finds whether a dynamic loader started the gateway (a
// postern built with cgo, as go install builds it where a C compiler is
// found), for Status and doctor to say so, and warns when the
// environment the gateway started from named libraries for that loader:
// they were loaded into the process that holds the keys, before its
// first instruction. On one static program, as make builds postern on
// Linux, the variables mean nothing.
func (g *Gateway) noteLoader() {
	interp, err := selfInterpreter()
	if err != nil {
		g.log.Warn("cannot tell how the gateway's program is linked", "err", err)
		return
	}
	g.interpreter = interp
	if interp == "" {
		return
	}
	for _, k := range harden.LoaderVariables {
		if v, ok := os.LookupEnv(k); ok {
			g.log.Warn("the gateway is linked dynamically and was started with a variable that names libraries for its loader: they were loaded into it", "variable", k, "value", v, "loader", interp)
		}
	}
}

// selfInterpreter is harden.SelfInterpreter; tests name another loader.
var selfInterpreter = harden.SelfInterpreter
