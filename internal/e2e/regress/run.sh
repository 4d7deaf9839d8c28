#!/bin/sh
# Run OpenSSH's own agent regression tests (Debian's openssh-tests, in
# /usr/lib/openssh/regress) against "postern agent".
#
#   run.sh POSTERN [TEST...]
#
# With POSTERN_REGRESS_OPENSSH=DIR, the suite and every OpenSSH program
# it runs (ssh, sshd and its sshd-session and sshd-auth, ssh-add,
# ssh-keygen, the helpers) are those unpacked under DIR (usr/bin,
# usr/sbin, usr/lib/openssh): OpenSSH 10's, beside the system's (see
# .ci/run). Without it, the system's.
#
# The suite is run unchanged: its test-exec.sh takes the agent from
# $TEST_SSH_SSHAGENT, which points at a two-line wrapper named ssh-agent
# that runs "postern agent" with its state, configuration (approval =
# "none", as ssh-agent signs) and sockets in a temporary directory.
# Nothing of the suite is edited. Its sshd gives each session an empty
# HOME of the test's own (SetEnv, through the suite's own
# TEST_SSH_SSHD_CONFOPTS), so that the login shell of the suite's
# remote commands reads none of the runner's dotfiles: bash reads
# ~/.bashrc when sshd runs it, and a root whose .bashrc starts pyenv
# made "make regress" (both suites, side by side) take 620 s of the
# machine's CPU instead of 232, and 318 s instead of 120, on 2 cores.
#
# The tests run at the same time, each in its own copy of the suite (its
# own $OBJ, agent, sockets, keys and port): they spend most of their time
# waiting for ssh and sshd, so together they take about as long as the
# longest one (agent-restrict) instead of the sum. The copies start from
# one template whose keys test-exec.sh generated once (the empty script
# postern-prepare.sh), so the RSA and DSA keys are not made ten times.
# Results are printed in the order the tests were named.
# POSTERN_REGRESS_KEEP=1 keeps the work directory, to look at a failure.
#
# Run as root, the script runs agent-getpeereid and agent-ptrace, which
# skip themselves under root, as an unprivileged user (postern-regress,
# created on first use, with the sudo the suite wants), and the others as
# root: hostkey-agent's sshd runs under sudo and must reach the agent. A
# test that prints "skipped" counts as failed: every listed test must
# really run.
set -u

postern=${1:?usage: run.sh POSTERN [TEST...]}
shift
openssh=${POSTERN_REGRESS_OPENSSH:-}
suite=$openssh/usr/lib/openssh/regress
# By default every agent test of the suite: OpenSSH 10's adds PKCS#11
# keys with certificates and with destination restrictions.
tests=${*:-agent-restrict sshsig agent hostkey-agent agent-timeout cert-file agent-pkcs11 agent-subprocess agent-getpeereid agent-ptrace}
if [ $# -eq 0 ]; then
	for t in agent-pkcs11-cert agent-pkcs11-restrict; do
		if [ -e "$suite/$t.sh" ]; then
			tests="$tests $t"
		fi
	done
fi
here=$(cd "$(dirname "$0")" && pwd)
# The OpenSSH programs the suite runs: the system's (ssh from PATH), or
# those under $openssh (a path without spaces: the list is split on them).
if [ -n "$openssh" ]; then
	case $openssh in *" "*)
		echo "regress: POSTERN_REGRESS_OPENSSH must not contain spaces" >&2
		exit 1 ;;
	esac
	bin=$openssh/usr/bin
	lib=$openssh/usr/lib/openssh
	programs="TEST_SSH_SSH=$bin/ssh TEST_SSH_SSHD=$openssh/usr/sbin/sshd
		TEST_SSH_SSHADD=$bin/ssh-add TEST_SSH_SSHKEYGEN=$bin/ssh-keygen
		TEST_SSH_SSHKEYSCAN=$bin/ssh-keyscan TEST_SSH_SFTP=$bin/sftp TEST_SSH_SCP=$bin/scp
		TEST_SSH_SFTPSERVER=$lib/sftp-server TEST_SSH_SSHD_SESSION=$lib/sshd-session
		TEST_SSH_SSHD_AUTH=$lib/sshd-auth TEST_SSH_SK_HELPER=$lib/ssh-sk-helper
		TEST_SSH_PKCS11_HELPER=$lib/ssh-pkcs11-helper
		TEST_SSH_OPENSSL=$(command -v openssl) PATH=$bin:$PATH"
	# PATH too: some of the suite's scripts run "ssh" by name
	# (hostkey-agent.sh lists the certificate types with "ssh -Q"), and
	# OpenSSH 10's test-exec.sh names no openssl of its own.
else
	programs="TEST_SSH_SSH=ssh TEST_SSH_SFTPSERVER=/usr/lib/openssh/sftp-server"
fi
# Ports for the tests' sshd configurations, one per test (and the
# unprivileged run's, from +50), below the range the kernel picks the
# ports of connections from (32768 up), which the end-to-end tests
# running beside the suite (make test) take. By default from a base 100
# apart for runs whose pids differ modulo 98 (make regress gives its two
# runs bases of their own).
portbase=${POSTERN_REGRESS_PORT:-$((20000 + $$ % 98 * 100))}

for p in "$suite/test-exec.sh" /usr/bin/sudo /usr/bin/gdb /usr/bin/softhsm2-util /usr/bin/openssl; do
	if [ ! -e "$p" ]; then
		echo "regress: $p is missing (apt-get install openssh-tests sudo gdb softhsm2 openssl)" >&2
		exit 1
	fi
done

work=$(mktemp -d /tmp/postern-regress.XXXXXX)
chmod 0755 "$work"
[ -n "${POSTERN_REGRESS_KEEP:-}" ] || trap 'rm -rf "$work"' EXIT

# What the suite's sshd sessions leave in /tmp, whatever TMPDIR says,
# when they end by a signal: a forwarded agent's socket in a directory
# of its own (/tmp/ssh-*), and the file ExposeAuthInfo writes
# (/tmp/sshauth.*); agent-restrict alone leaves some eighty of each.
# Once the tests are done, this run removes what it made: a directory
# whose sockets no longer answer, and a file naming a key of this run's
# suite. What was there before, a socket that answers (a person's
# forwarded agent) and a file naming another key are never touched.
sshd_left_before=$(ls -d /tmp/ssh-* /tmp/sshauth.* 2>/dev/null)
clean_sshd_leftovers() {
	find "$work" -name '*.pub' -exec awk '{ print $2 }' {} + > "$work/suite-keys" 2>/dev/null
	for left in /tmp/ssh-* /tmp/sshauth.*; do
		[ -e "$left" ] || continue
		case "
$sshd_left_before
" in
		*"
$left
"*) continue ;;
		esac
		if [ -f "$left" ]; then
			# "publickey TYPE KEY" a line for each key that logged in
			key=$(awk '{ print $3; exit }' "$left" 2>/dev/null) # another's, unreadable: not judged
			if [ -n "$key" ] && grep -qxF -- "$key" "$work/suite-keys"; then
				rm -f "$left" 2>/dev/null
			fi
			continue
		fi
		[ -d "$left" ] || continue
		live=""
		for sock in "$left"/*; do
			if [ "$sock" = "$left/*" ]; then
				live=1 # empty: an sshd (of another run) may be about to make its socket
				break
			fi
			if [ ! -S "$sock" ]; then
				live=1 # not a socket: not this run's to judge
				break
			fi
			# ssh-add exits 2 when nothing answers on the socket.
			SSH_AUTH_SOCK=$sock ssh-add -l >/dev/null 2>&1
			if [ $? -ne 2 ]; then
				live=1
				break
			fi
		done
		[ -n "$live" ] || rm -rf "$left" 2>/dev/null
	done
}

# Tests that skip themselves under root run as an unprivileged user, in
# a run of this script of their own, started first and waited for last.
asuser="agent-getpeereid agent-ptrace"
userpid=""
if [ "$(id -u)" = 0 ]; then
	mine=""
	theirs=""
	for t in $tests; do
		case " $asuser " in
		*" $t "*) theirs="$theirs $t" ;;
		*) mine="$mine $t" ;;
		esac
	done
	if [ -n "$theirs" ]; then
		user=postern-regress
		# Another run of this script (make regress runs two side by
		# side) may create the user or write the sudoers file at the
		# same time: useradd fails while the other holds the password
		# file's lock, and a user the other made is as good; sudo reads
		# a whole file, renamed into place.
		tries=0
		until id "$user" >/dev/null 2>&1; do
			useradd --create-home --shell /bin/sh "$user" && break
			tries=$((tries + 1))
			[ $tries -lt 5 ] || exit 1
			sleep 1
		done
		echo "$user ALL=(ALL) NOPASSWD: ALL" > "/etc/sudoers.d/.postern-regress.$$"
		chmod 0440 "/etc/sudoers.d/.postern-regress.$$"
		mv -f "/etc/sudoers.d/.postern-regress.$$" /etc/sudoers.d/postern-regress
		mkdir "$work/user"
		cp "$postern" "$work/user/postern"
		cp "$here/run.sh" "$work/user/run.sh"
		chmod 0755 "$work/user" "$work/user/postern" "$work/user/run.sh"
		runuser -u "$user" -- env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
			HOME="$(getent passwd "$user" | cut -d: -f6)" LANG=C.UTF-8 \
			POSTERN_REGRESS_PORT=$((portbase + 50)) POSTERN_REGRESS_OPENSSH="$openssh" \
			sh "$work/user/run.sh" "$work/user/postern" $theirs >"$work/user/out" 2>&1 &
		userpid=$!
	fi
	tests=$mine
	mkdir -p /run/sshd
fi

# The template: the suite, with the keys test-exec.sh makes for every
# test made once.
tmpl=$work/template
cp -a "$suite" "$tmpl"
: > "$tmpl/postern-prepare.sh"
(cd "$tmpl" && env TEST_SHELL=sh $programs TEST_SSH_UNSAFE_PERMISSIONS=1 \
	OBJ="$tmpl" BUILDDIR="$tmpl" sh "$tmpl/test-exec.sh" "$tmpl" "$tmpl/postern-prepare.sh" \
	>"$work/prepare.log" 2>&1 </dev/null) || {
	echo "regress: preparing the suite failed:" >&2
	cat "$work/prepare.log" >&2
	exit 1
}
rm -f "$tmpl/postern-prepare.sh"

# run_test T N runs test T in its own copy, $work/N (a number: the
# suite's scripts grep their configuration for words such as "hostkey",
# which a path must not contain), with port $portbase+N, and leaves its
# output, exit status and duration there.
run_test() {
	d=$work/$2
	mkdir -p "$d/bin" "$d/home" "$d/xdg/config/postern" "$d/xdg/state" "$d/xdg/run"
	chmod 0700 "$d/xdg/run"
	cp -a "$tmpl" "$d/regress"
	printf 'approval = "none"\n' > "$d/xdg/config/postern/config.toml"
	cat > "$d/bin/ssh-agent" <<WRAP
#!/bin/sh
XDG_CONFIG_HOME=$d/xdg/config XDG_STATE_HOME=$d/xdg/state XDG_RUNTIME_DIR=$d/xdg/run \\
	exec $work/postern agent "\$@"
WRAP
	chmod 0755 "$d/bin/ssh-agent"
	obj=$d/regress
	start=$(date +%s)
	(cd "$obj" && env SUDO=sudo TEST_SHELL=sh $programs TEST_SSH_SSHAGENT="$d/bin/ssh-agent" \
		TEST_SSH_UNSAFE_PERMISSIONS=1 TEST_SSH_SSHD_CONFOPTS="SetEnv HOME=$d/home" \
		TEST_SSH_PORT=$((portbase + $2)) OBJ="$obj" BUILDDIR="$obj" sh "$obj/test-exec.sh" "$obj" "$obj/$1.sh" \
		>"$d/out" 2>&1 </dev/null)
	echo $? > "$d/rc"
	echo $(($(date +%s) - start)) > "$d/secs"
}

cp "$postern" "$work/postern"
chmod 0755 "$work/postern"
n=0
for t in $tests; do
	run_test "$t" $n &
	n=$((n + 1))
done
wait
clean_sshd_leftovers

passed=0
failed=0
if [ -n "$userpid" ]; then
	out=$(cat "$work/user/out")
	printf '%s\n' "$out" | grep -v '^regress: '
	summary=$(printf '%s\n' "$out" | grep '^regress: ' | tail -n 1)
	passed=$(echo "$summary" | sed -n 's/^regress: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
	failed=$(echo "$summary" | sed -n 's/^regress: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
	passed=${passed:-0}
	failed=${failed:-1}
fi
n=0
for t in $tests; do
	d=$work/$n
	n=$((n + 1))
	obj=$d/regress
	rc=$(cat "$d/rc" 2>/dev/null || echo 1)
	secs=$(cat "$d/secs" 2>/dev/null || echo "?")
	if [ "$rc" -eq 0 ] && ! grep -qi 'skipped' "$d/out"; then
		echo "ok   $t (${secs}s)"
		passed=$((passed + 1))
	else
		echo "FAIL $t (${secs}s, exit $rc)"
		sed 's/^/    /' "$d/out"
		if [ -f "$d/xdg/state/postern/agent.log" ]; then
			grep -i 'refus\|error' "$d/xdg/state/postern/agent.log" | tail -n 20 | sed 's/^/    agent.log: /'
		fi
		if [ -f "$obj/failed-regress.log" ]; then
			tail -n 40 "$obj/failed-regress.log" | sed 's/^/    regress.log: /'
		fi
		failed=$((failed + 1))
	fi
done
echo "regress: $passed passed, $failed failed"
[ $failed -eq 0 ]
