package confine

import (
	"os"
	"os/signal"
)

// NotifyUnlessIgnored relays to c those of sigs the process does not
// ignore, as signal.Notify does, and leaves the others ignored: a signal
// postern run or the run's helper was started ignoring (SIGHUP under
// nohup, SIGINT and SIGQUIT in a script's background job) is the run's
// program's to inherit ignored, not theirs to catch and pass on.
// (signal.Notify takes an ignored signal back, and with no signal at all
// relays every one.)
func NotifyUnlessIgnored(c chan<- os.Signal, sigs ...os.Signal) {
	var caught []os.Signal
	for _, s := range sigs {
		if !signal.Ignored(s) {
			caught = append(caught, s)
		}
	}
	if len(caught) > 0 {
		signal.Notify(c, caught...)
	}
}
