// Command benchgoals reads the output of "go test -bench" (as make bench
// runs it) on its standard input, copies it to its standard output, and
// then prints each performance goal of postern beside its anchor — OpenSSH
// ssh-agent, direct ssh, the floor measured in the same run — with the
// figure measured and whether the goal held in this run (PASS or MISS).
// A goal whose benchmark did not run is listed as not measured.
//
// The benchmarks report medians and ratios measured in alternation with
// their anchors (see internal/e2e/goals_bench_linux_test.go and
// default_bench_linux_test.go), so a busy machine
// slows both sides alike; the absolute figures still move with the load.
//
//	go test -run '^$' -bench . ./... | go run ./internal/benchgoals
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
)

// metrics maps "BenchmarkName unit" to the value reported, the last one
// seen winning; the -N suffix of the benchmark name is dropped.
type metrics map[string]float64

func parse(r io.Reader, echo io.Writer) (metrics, error) {
	m := metrics{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(echo, line)
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := f[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		// f[1] is the iteration count; value-unit pairs follow.
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				break
			}
			m[name+" "+f[i+1]] = v
		}
	}
	return m, sc.Err()
}

// A goal compares a figure with a target.
type goal struct {
	what   string
	value  string // "Benchmark unit" of the figure
	anchor string // "Benchmark unit" of the anchor's figure, or ""
	label  string // what the anchor is
	check  string // "Benchmark unit" of what is compared with target
	atMost bool   // the target is an upper bound (else a lower bound)
	target float64
	unit   string // of value and anchor
	kind   string // of the compared figure: "x" (a ratio) or the unit
	// given, the condition the figure must be measured under: the
	// benchmark reports it as the metric given, at least given.
	given   string
	atLeast float64
}

var goals = []goal{
	{what: "Ed25519 sign, sequential, default configuration", value: "BenchmarkSignDefault seq-default-µs", anchor: "BenchmarkSignDefault seq-ssh-agent-µs", label: "ssh-agent", check: "BenchmarkSignDefault x-seq-default-vs-ssh-agent", target: 1.5, unit: "µs", kind: "x faster"},
	{what: "audited Ed25519 sign, sequential", value: "BenchmarkSignGoals seq-audited-µs", anchor: "BenchmarkSignGoals seq-ssh-agent-µs", label: "ssh-agent", check: "BenchmarkSignGoals x-seq-audited-vs-ssh-agent", target: 1.5, unit: "µs", kind: "x faster"},
	{what: "audited Ed25519 sign, sequential, over the floor", value: "BenchmarkSignGoals seq-audited-µs", anchor: "BenchmarkSignGoals floor-µs", label: "floor", check: "BenchmarkSignGoals x-seq-audited-over-floor", atMost: true, target: 1.3, unit: "µs", kind: "x the floor"},
	{what: "audited Ed25519 sign, 8 concurrent clients", value: "BenchmarkSignGoals conc8-audited-µs", anchor: "BenchmarkSignGoals conc8-ssh-agent-µs", label: "ssh-agent", check: "BenchmarkSignGoals x-conc8-audited-vs-ssh-agent", target: 5, unit: "µs", kind: "x faster"},
	{what: "unaudited Ed25519 sign, sequential", value: "BenchmarkSignGoals seq-unaudited-µs", anchor: "BenchmarkSignGoals seq-ssh-agent-µs", label: "ssh-agent", check: "BenchmarkSignGoals x-seq-unaudited-vs-ssh-agent", target: 5, unit: "µs", kind: "x faster"},
	{what: "unaudited Ed25519 sign, new connection each", value: "BenchmarkSignGoals conn-unaudited-µs", anchor: "BenchmarkSignGoals conn-ssh-agent-µs", label: "ssh-agent", check: "BenchmarkSignGoals x-conn-unaudited-vs-ssh-agent", target: 3, unit: "µs", kind: "x faster"},
	{what: "peer identification (Identify)", value: "BenchmarkIdentify ns/op", check: "BenchmarkIdentify ns/op", atMost: true, target: 40000, unit: "ns", kind: "ns"},
	{what: "decision for a request a grant covers", value: "BenchmarkDecideCoveredByGrant ns/op", check: "BenchmarkDecideCoveredByGrant ns/op", atMost: true, target: 50000, unit: "ns", kind: "ns"},
	{what: "decision with 10,000 grants on the key vs 1", value: "BenchmarkDecideManyGrants µs-median-10000grants", anchor: "BenchmarkDecideManyGrants µs-median-1grant", label: "1 grant", check: "BenchmarkDecideManyGrants ratio-10000/1", atMost: true, target: 1.2, unit: "µs", kind: "x"},
	{what: "audit show --json, whole log, offline", value: "BenchmarkHistory show-s", check: "BenchmarkHistory show-s", atMost: true, target: 10, unit: "s", kind: "s"},
	{what: "audit show --json, offline, peak memory", value: "BenchmarkHistory show-MiB", anchor: "BenchmarkHistory kdf-MiB", label: "Argon2id", check: "BenchmarkHistory show-MiB", atMost: true, target: 64, unit: "MiB", kind: "MiB"},
	{what: "audit show --json, whole log, through the gateway", value: "BenchmarkHistory gw-show-s", check: "BenchmarkHistory gw-show-s", atMost: true, target: 10, unit: "s", kind: "s"},
	{what: "audit show --json, through the gateway, command peak memory", value: "BenchmarkHistory gw-show-MiB", check: "BenchmarkHistory gw-show-MiB", atMost: true, target: 64, unit: "MiB", kind: "MiB"},
	{what: "audit show --json, through the gateway, gateway memory while reading", value: "BenchmarkHistory gw-show-gateway-MiB", check: "BenchmarkHistory gw-show-gateway-MiB", atMost: true, target: 64, unit: "MiB", kind: "MiB"},
	{what: "activity, whole log, offline", value: "BenchmarkHistory activity-s", check: "BenchmarkHistory activity-s", atMost: true, target: 10, unit: "s", kind: "s"},
	{what: "activity, offline, peak memory", value: "BenchmarkHistory activity-MiB", anchor: "BenchmarkHistory kdf-MiB", label: "Argon2id", check: "BenchmarkHistory activity-MiB", atMost: true, target: 64, unit: "MiB", kind: "MiB"},
	{what: "activity, whole log, through the gateway", value: "BenchmarkHistory gw-activity-s", check: "BenchmarkHistory gw-activity-s", atMost: true, target: 10, unit: "s", kind: "s"},
	{what: "activity, through the gateway, command peak memory", value: "BenchmarkHistory gw-activity-MiB", check: "BenchmarkHistory gw-activity-MiB", atMost: true, target: 64, unit: "MiB", kind: "MiB"},
	{what: "activity, through the gateway, gateway memory while reading", value: "BenchmarkHistory gw-activity-gateway-MiB", check: "BenchmarkHistory gw-activity-gateway-MiB", atMost: true, target: 64, unit: "MiB", kind: "MiB"},
	{what: "sessions --history, whole log, offline", value: "BenchmarkHistory sessions-s", check: "BenchmarkHistory sessions-s", atMost: true, target: 10, unit: "s", kind: "s"},
	{what: "sessions --history, offline, peak memory", value: "BenchmarkHistory sessions-MiB", anchor: "BenchmarkHistory kdf-MiB", label: "Argon2id", check: "BenchmarkHistory sessions-MiB", atMost: true, target: 64, unit: "MiB", kind: "MiB"},
	{what: "sessions --history, whole log, through the gateway", value: "BenchmarkHistory gw-sessions-s", check: "BenchmarkHistory gw-sessions-s", atMost: true, target: 10, unit: "s", kind: "s"},
	{what: "sessions --history, through the gateway, command peak memory", value: "BenchmarkHistory gw-sessions-MiB", check: "BenchmarkHistory gw-sessions-MiB", atMost: true, target: 64, unit: "MiB", kind: "MiB"},
	{what: "sessions --history, through the gateway, gateway memory while reading", value: "BenchmarkHistory gw-sessions-gateway-MiB", check: "BenchmarkHistory gw-sessions-gateway-MiB", atMost: true, target: 64, unit: "MiB", kind: "MiB"},
	{what: "gateway start over the log", value: "BenchmarkHistory gateway-start-ms", check: "BenchmarkHistory gateway-start-ms", atMost: true, target: 500, unit: "ms", kind: "ms"},
	{what: "journal open, 100,000 entries", value: "BenchmarkOpen100k/Open ns/op", check: "BenchmarkOpen100k/Open ns/op", atMost: true, target: 100e6, unit: "ns", kind: "ns"},
	{what: "request to approver's console, p99, 100 pending cards", value: "BenchmarkCardToConsole p99-µs", anchor: "BenchmarkCardToConsole median-µs", label: "median", check: "BenchmarkCardToConsole p99-µs", atMost: true, target: 2000, unit: "µs", kind: "µs", given: "BenchmarkCardToConsole pending-cards", atLeast: 100},
	{what: "1,000 idle connections, extra memory", value: "BenchmarkIdleConnections extra-MiB", anchor: "BenchmarkIdleConnections ssh-agent-extra-MiB", label: "ssh-agent", check: "BenchmarkIdleConnections extra-MiB", atMost: true, target: 3, unit: "MiB", kind: "MiB"},
	{what: "idle resident memory", value: "BenchmarkIdleMemory/agent=postern RSS-MiB", anchor: "BenchmarkIdleMemory/agent=ssh-agent RSS-MiB", label: "ssh-agent", check: "BenchmarkIdleMemory/agent=postern RSS-MiB", atMost: true, target: 15, unit: "MiB", kind: "MiB"},
	{what: "Ed25519 sign with an upstream agent's key, sequential", value: "BenchmarkUpstreamSign seq-gated-µs", anchor: "BenchmarkUpstreamSign seq-direct-µs", label: "ssh-agent direct", check: "BenchmarkUpstreamSign seq-extra-µs", atMost: true, target: 100, unit: "µs", kind: "µs more"},
	{what: "Ed25519 sign with an upstream agent's key, new connection each", value: "BenchmarkUpstreamSign conn-gated-µs", anchor: "BenchmarkUpstreamSign conn-direct-µs", label: "ssh-agent direct", check: "BenchmarkUpstreamSign conn-extra-µs", atMost: true, target: 100, unit: "µs", kind: "µs more"},
	{what: "ssh host true through the bastion (OpenSSH 10, same key exchange)", value: "BenchmarkBastion true-bastion-ms", anchor: "BenchmarkBastion true-direct-ms", label: "direct ssh", check: "BenchmarkBastion extra-ms", atMost: true, target: 5, unit: "ms", kind: "ms more"},
	{what: "bulk transfer through the bastion (OpenSSH 10, same key exchange)", value: "BenchmarkBastion bulk-bastion-MB/s", anchor: "BenchmarkBastion bulk-direct-MB/s", label: "direct ssh", check: "BenchmarkBastion bulk-fraction", target: 0.95, unit: "MB/s", kind: "of direct"},
	{what: "bastion upstream key exchange not weaker than direct, OpenSSH 10 host", value: "BenchmarkBastion kex-pq-bastion", anchor: "BenchmarkBastion kex-pq-direct", label: "direct (1 = PQ hybrid)", check: "BenchmarkBastion kex-not-weaker", target: 1, unit: "", kind: ""},
	{what: "bastion upstream key exchange not weaker than direct, system OpenSSH host", value: "BenchmarkBastion kex-pq-bastion-system", anchor: "BenchmarkBastion kex-pq-direct-system", label: "direct (1 = PQ hybrid)", check: "BenchmarkBastion kex-not-weaker-system", target: 1, unit: "", kind: ""},
}

func show(v float64, unit string) string {
	switch {
	case unit == "ns" && v >= 1e6:
		return fmt.Sprintf("%.1f ms", v/1e6)
	case unit == "ns":
		return fmt.Sprintf("%.1f µs", v/1e3)
	case unit == "":
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + unit
}

// configuration says what the signing goals measure, as the README's
// table does: the headline is the default configuration whole, the rows
// after it the agent alone, under approval = "none".
const configuration = `Signing goals: "default configuration" is a gateway with no configuration file (approval = "session": a grant, approved by an answer from outside the client's session, covers the client's requests, each checked against live evidence), vault unlocked and audit log on (each record fdatasync'ed before its signature leaves), signing for a client in another process. "audited" is the same vault and audit log, "unaudited" no vault; both under approval = "none", so that the agent is measured without the grant; the agent as "postern agent -D" runs it. The grant lookup alone is the goal "decision for a request a grant covers".`

func report(w io.Writer, m metrics) (missed int) {
	fmt.Fprintf(w, "%s\n\n", configuration)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GOAL\tPOSTERN\tANCHOR\tMEASURED\tTARGET\tRESULT")
	for _, g := range goals {
		v, ok := m[g.value]
		c, cok := m[g.check]
		if !ok || !cok {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\tnot measured\n", g.what)
			missed++
			continue
		}
		anchor := "-"
		if a, ok := m[g.anchor]; ok {
			anchor = g.label + " " + show(a, g.unit)
		}
		held := c >= g.target
		op := "≥"
		if g.atMost {
			held, op = c <= g.target, "≤"
		}
		result := "PASS"
		switch n, ok := m[g.given]; {
		case g.given != "" && (!ok || n < g.atLeast):
			result = fmt.Sprintf("MISS: measured with %s %s, not at least %s", g.given, strconv.FormatFloat(n, 'g', 4, 64), strconv.FormatFloat(g.atLeast, 'g', 4, 64))
		case !held:
			result = "MISS"
		}
		if result != "PASS" {
			missed++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s %s\t%s %s\t%s\n", g.what, show(v, g.unit), anchor,
			strconv.FormatFloat(c, 'g', 4, 64), g.kind, op, strconv.FormatFloat(g.target, 'g', 4, 64), result)
	}
	tw.Flush()
	return missed
}

func main() {
	m, err := parse(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchgoals:", err)
		os.Exit(1)
	}
	fmt.Println()
	missed := report(os.Stdout, m)
	fmt.Printf("\n%d of %d goals held in this run\n", len(goals)-missed, len(goals))
}
