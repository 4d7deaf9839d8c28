# postern — build, test, lint, install.
#
#   make build     build ./bin/postern
#   make test      run every test once (unit, end-to-end against real
#                  OpenSSH, race detector, OpenSSH's own agent regression
#                  tests) and the lint, in two lanes
#   make unit      the packages' own tests, but for those make race runs
#   make e2e       the end-to-end tests
#   make race      the packages whose goroutines share state, under the
#                  race detector (needs a C compiler)
#   make regress   OpenSSH's agent regression tests against postern agent
#                  (the system's OpenSSH and OpenSSH 10, side by side)
#   make lint      gofmt, go vet (linux amd64, 386 and arm64, and darwin),
#                  mandoc -Tlint on the man pages
#   make bench     side-by-side benchmarks against OpenSSH ssh-agent and
#                  direct ssh, each goal printed with PASS or MISS
#   make soak      10,000 idle connections and 64 signers for 10 minutes
#                  (SOAK=5m for another duration): memory and descriptors
#   make fuzz      every fuzz target in turn, FUZZTIME (30s) each
#   make install   install the binary, man pages, systemd user units
#                  (service and socket) and shell completions (PREFIX, DESTDIR)

PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
MANDIR  ?= $(PREFIX)/share/man
DESTDIR ?=
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
LDFLAGS := -X main.Version=$(VERSION)

MAN1 := $(wildcard man/*.1)
MAN5 := $(wildcard man/*.5)

.PHONY: all build test unit race regress lint man bench benchcheck soak fuzz install clean

all: build

# On Linux postern is built as one static program (CGO_ENABLED=0; the
# end-to-end tests build it so too, and make unit its tests): nothing of
# the C library is loaded into the process that holds the keys
# (LD_PRELOAD and LD_LIBRARY_PATH included), and its idle resident
# memory is 3 MiB smaller. Go's own resolver then looks up the bastion's
# host names (/etc/hosts and DNS), and Go's own code the landlock rules of
# every thread (psx). macOS needs cgo for the Keychain.
STATIC := $(if $(filter linux,$(shell $(GO) env GOOS)),CGO_ENABLED=0)

build:
	$(STATIC) $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/postern ./cmd/postern

# make test runs every test once, in two lanes: the end-to-end tests in
# one, and in the other the race detector's run, OpenSSH's two suites
# side by side, the other packages' tests, the benchmarks' check and the
# lint, one after another. The end-to-end tests spend much of their time
# waiting on ssh, sshd and the gateway, and alone keep one core of two
# busy: the other lane fills the other. More at once does not help on 2
# cores: the end-to-end tests in two parts beside four other jobs took
# each longer than the whole alone, and the whole 16 minutes, with the
# cores 95% busy. A failure in either lane fails make test once both
# have stopped, and each lane's output is printed whole when it ends.
test:
	@$(MAKE) --no-print-directory --keep-going -j2 --output-sync=target e2e test-others

.PHONY: test-others
test-others:
	@rc=0; \
	for stage in race regress unit benchcheck lint; do \
	  $(MAKE) --no-print-directory $$stage || rc=1; \
	done; exit $$rc

# $(call hermetic,COMMANDS) runs the shell commands COMMANDS with an empty
# HOME of their own and no XDG directories: every test keeps its state
# (remote markers included) under a temporary directory, and a run in
# which any test wrote into HOME fails (the go command's own telemetry,
# in .config/go, aside).
hermetic = home=$$(mktemp -d); \
	export GOCACHE="$$($(GO) env GOCACHE)" GOMODCACHE="$$($(GO) env GOMODCACHE)" \
	    GOPATH="$$($(GO) env GOPATH)" GOENV="$$($(GO) env GOENV)"; \
	export HOME="$$home" XDG_STATE_HOME= XDG_CONFIG_HOME= XDG_DATA_HOME= XDG_CACHE_HOME= XDG_RUNTIME_DIR=; \
	$(1); rc=$$?; \
	left=$$(find "$$home" -mindepth 1 -maxdepth 4 -not -path "$$home/.config" -not -path "$$home/.config/go*" | head -20); \
	if [ -n "$$left" ]; then echo "tests wrote into HOME ($$home):"; echo "$$left"; rc=1; fi; \
	rm -rf "$$home"; exit $$rc

# A package's tests may take up to 45 minutes: the end-to-end package
# took 17 to 19 minutes on a 2-core machine whose kernel spends as long
# as the tests themselves, and go test's own timeout kills the package
# with no cleanup and no test named, so it is no place for a limit on
# speed (the benchmarks measure that).
GOTEST = $(GO) test -count=1 -timeout 45m

# make unit: the tests of every package but the end-to-end one and those
# make race runs (the race detector's run is their only one), and the
# four tests make race leaves out (RACE_SKIP), which must all be found:
# a test renamed would otherwise run nowhere. They are built as postern
# is ($(STATIC)): the command line's scripts run this build of postern,
# the test binary.
unit:
	@pkgs=$$($(GO) list ./... | grep -vxF "$$($(GO) list $(RACE_PKGS) ./internal/e2e/)") || exit 1; \
	want=$$(echo '$(RACE_SKIP)' | tr '|' '\n' | wc -l); \
	have=$$($(GO) test -list '$(RACE_SKIP)' $(RACE_SKIP_PKGS) | grep -c '^Test'); \
	[ "$$have" -eq "$$want" ] || { echo "make unit: RACE_SKIP names $$want tests, $(RACE_SKIP_PKGS) hold $$have of them"; exit 1; }; \
	$(call hermetic,$(STATIC) $(GOTEST) $$pkgs; r=$$?; $(STATIC) $(GOTEST) -run '$(RACE_SKIP)' $(RACE_SKIP_PKGS) || r=1; (exit $$r))

# make e2e: the end-to-end tests, against real OpenSSH programs. Those
# that mostly wait (mostlyWaits in internal/e2e) run four at a time once
# the others are done: the longest sleeps 35 s, as a person reading
# through a pager does, and one after another they took 149 s.
.PHONY: e2e
e2e:
	@$(call hermetic,$(GOTEST) -parallel 4 ./internal/e2e/)

# The packages whose goroutines share state (the audit log's group
# commit, the command journal's writer and its check, the gateway, the
# agent's connections, the approval engine, the parked connections, the
# watches of a process's exit), under the race detector, whose slower
# exits also widen the moment a process is caught exiting.
# Argon2id is not instrumented (RACE_GCFLAGS): a vault's key derivation,
# a pure function of its inputs whose lanes share nothing of ours, took
# 2.7 s instrumented against 0.25 s, and the gateway's tests, which
# derive at every vault's creation and unlock, 11 minutes. Four tests
# run in "make unit" instead (RACE_SKIP, in RACE_SKIP_PKGS): two of the
# audit log that verify a log once for each of its bytes, one goroutine
# throughout, and two of the gateway whose point is size, 450 cards
# whose text passes a control line's 64 MiB and 120 journal entries of
# 256 KiB, whose bytes the race detector slowed fifteen and seven times
# (131 s and 98 s of the run's 400 s): the same goroutines meet in
# TestFollowedCardsMatchTheEngine and TestFollowJournalMissesNothing.
RACE_PKGS := ./audit/ ./bastion/journal/ ./gateway/ ./sshagent/ ./approvals/ ./internal/park/ ./internal/procid/
RACE_GCFLAGS := golang.org/x/crypto/argon2=-race=false
RACE_SKIP := ^(TestEveryPrefixIsACrash|TestEveryByteFlipIsDetected|TestFollowedCardsReachAConsoleHoweverLargeTogether|TestJournalListOfLongCommands)$$
RACE_SKIP_PKGS := ./audit/ ./gateway/
race:
	@$(call hermetic,CGO_ENABLED=1 $(GOTEST) -race -gcflags='$(RACE_GCFLAGS)' -skip '$(RACE_SKIP)' $(RACE_PKGS))

# OpenSSH's agent regression tests (Debian's openssh-tests), unchanged,
# with postern agent standing in for ssh-agent: see the script's header.
# Twice, side by side: the system's OpenSSH and its suite, and OpenSSH
# 10's, unpacked in $(OPENSSH10) (.ci/run puts it there); each one's
# output is printed once both are done. Each suite's tests take ports
# from a base of their own, 100 apart, where the script's default (from
# its pid) could give the two overlapping ranges.
REGRESS_TESTS ?=
OPENSSH10 ?= /opt/openssh-10
REGRESS_PORT := $(shell echo $$((20000 + $$$$ % 98 * 100)))
REGRESS_RUN = sh internal/e2e/regress/run.sh bin/postern $(REGRESS_TESTS)
regress: build
	@out=$$(mktemp -d); \
	POSTERN_REGRESS_PORT=$(REGRESS_PORT) $(REGRESS_RUN) > "$$out/system" 2>&1 & system=$$!; \
	POSTERN_REGRESS_PORT=$$(($(REGRESS_PORT) + 100)) POSTERN_REGRESS_OPENSSH=$(OPENSSH10) \
	  $(REGRESS_RUN) > "$$out/openssh10" 2>&1 & openssh10=$$!; \
	wait $$system; rc=$$?; wait $$openssh10 || rc=1; \
	echo "regress: the system's OpenSSH"; cat "$$out/system"; \
	echo "regress: OpenSSH 10, in $(OPENSSH10)"; cat "$$out/openssh10"; \
	rm -rf "$$out"; exit $$rc

lint: man
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	GOOS=darwin $(GO) vet ./...
	GOARCH=386 $(GO) vet ./...
	GOARCH=arm64 $(GO) vet ./...

man:
	mandoc -Tlint -W warning $(MAN1) $(MAN5)

# The soak test is not part of "make test": it runs as root (it raises
# the descriptor limit) for ten minutes.
SOAK ?= 10m
soak:
	POSTERN_SOAK_DURATION=$(SOAK) $(GO) test -tags soak -count=1 -timeout 60m -run TestSoak -v ./internal/e2e/

# make fuzz runs each fuzz target (go test -fuzz) for FUZZTIME; "make
# test" runs their seeds only. A failing input is written under the
# package's testdata/fuzz, where the next "make test" runs it again.
# Go 1.26's fuzzing coordinator may report its own -fuzztime deadline as
# a failure ("context deadline exceeded", no failing input:
# go.dev/issue/75804, fixed in Go 1.27): that alone is said, not failed.
# Each new input is minimized for at most FUZZMINIMIZE: go test's own
# 60s would take the whole of FUZZTIME for a target whose inputs are
# logs of a few KiB (FuzzVerify: 18 inputs in 75s, 37,000 with 5s).
FUZZTIME ?= 30s
FUZZMINIMIZE ?= 5s
fuzz:
	@out=$$(mktemp); trap 'rm -f "$$out" "$$out.rc"' EXIT; \
	for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "$$pkg $$f"; \
	    { $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) $$pkg 2>&1; echo $$? >"$$out.rc"; } | tee "$$out"; \
	    [ "$$(cat "$$out.rc")" = 0 ] && continue; \
	    if grep -q 'Failing input written to' "$$out" || ! grep -qx '    context deadline exceeded' "$$out"; then exit 1; fi; \
	    echo "make fuzz: $$f: the fuzzing coordinator's own deadline at the end of FUZZTIME, no failing input (go.dev/issue/75804): not a failure"; \
	  done; \
	done

# make bench runs every benchmark once, side by side with its anchors
# (OpenSSH ssh-agent, direct ssh, the floor measured in the same run), and
# internal/benchgoals prints each goal beside its anchor with PASS or
# MISS. Machines are noisy: measure when the load is low (uptime). One
# package's benchmarks run at a time (-p 1): go test would run two at
# once on 2 cores, and the figures of one (a decision, the journal's
# open) would hold the other's load; the run takes as long either way,
# the end-to-end benchmarks being most of it.
BENCH_PKGS := ./internal/e2e/ ./approvals/ ./sshagent/ ./audit/ ./internal/procid/ ./bastion/journal/ ./gateway/api/ ./internal/heldsig/

bench:
	$(GO) test -p 1 -run '^$$' -bench . -benchtime 2s -count 1 -timeout 90m $(BENCH_PKGS) 2>&1 | $(GO) run ./internal/benchgoals

# benchcheck runs every benchmark once, with small fixtures (-short), so
# that they keep working; it times nothing.
benchcheck:
	$(GO) test -short -run '^$$' -bench . -benchtime 1x -count 1 -timeout 30m $(BENCH_PKGS)

DATADIR ?= $(PREFIX)/share
# The user's service manager reads $PREFIX/lib/systemd/user under /usr and
# /usr/local, and, in the home directory, ~/.local/share/systemd/user
# ($XDG_DATA_HOME), never ~/.local/lib: a PREFIX under $HOME puts the
# units under its share.
UNITDIR ?= $(if $(filter $(HOME)/%,$(PREFIX)),$(DATADIR)/systemd/user,$(PREFIX)/lib/systemd/user)
# Where each shell looks for completions: bash-completion and fish under
# $XDG_DATA_DIRS (by default /usr/local/share:/usr/share), zsh in its
# fpath, which holds /usr/local/share/zsh/site-functions (a package for
# Debian's /usr installs into /usr/share/zsh/vendor-completions instead:
# ZSHCOMPDIR).
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
FISHCOMPDIR ?= $(DATADIR)/fish/vendor_completions.d
ZSHCOMPDIR  ?= $(DATADIR)/zsh/site-functions

install: build
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(UNITDIR)
	install -m 0755 bin/postern $(DESTDIR)$(BINDIR)/postern
	install -m 0644 $(MAN1) $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 $(MAN5) $(DESTDIR)$(MANDIR)/man5/
	sed 's|/usr/local/bin/postern|$(BINDIR)/postern|' contrib/systemd/user/postern.service > $(DESTDIR)$(UNITDIR)/postern.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/postern.service
	install -m 0644 contrib/systemd/user/postern.socket $(DESTDIR)$(UNITDIR)/postern.socket
	install -d $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR)
	bin/postern completion bash > $(DESTDIR)$(BASHCOMPDIR)/postern
	bin/postern completion zsh > $(DESTDIR)$(ZSHCOMPDIR)/_postern
	bin/postern completion fish > $(DESTDIR)$(FISHCOMPDIR)/postern.fish

clean:
	rm -rf bin

# The README's first command: eval "$$(make -s agent)" builds postern,
# reuses the agent on the well-known socket or starts one, and prints the
# SSH_AUTH_SOCK line to use, where approval cards will appear, and, when
# postern is not on PATH, the PATH line that puts bin/ on it.
.PHONY: agent
agent: build
	@bin/postern agent --ensure -s
	@command -v postern >/dev/null 2>&1 || echo 'PATH=$(CURDIR)/bin:$$PATH; export PATH;'
