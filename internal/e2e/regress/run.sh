#!/bin/sh
# Run OpenSSH's own agent regression tests (Debian's openssh-tests, in
# /usr/lib/openssh/regress) against "postern agent".
#
#   run.sh POSTERN [TEST...]
#
# The suite is copied to a temporary directory and run unchanged: its
# test-exec.sh takes the agent from $TEST_SSH_SSHAGENT, which points at a
# two-line wrapper named ssh-agent that runs "postern agent" with its
# state, configuration (approval = "none", as ssh-agent signs) and
# sockets in the temporary directory. Nothing of the suite is edited.
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
tests=${*:-agent agent-timeout agent-subprocess agent-restrict hostkey-agent cert-file sshsig agent-getpeereid agent-ptrace agent-pkcs11}
suite=/usr/lib/openssh/regress
here=$(cd "$(dirname "$0")" && pwd)

for p in "$suite/test-exec.sh" /usr/bin/sudo /usr/bin/gdb /usr/bin/softhsm2-util /usr/bin/openssl; do
	if [ ! -e "$p" ]; then
		echo "regress: $p is missing (apt-get install openssh-tests sudo gdb softhsm2 openssl)" >&2
		exit 1
	fi
done

# Tests that skip themselves under root run as an unprivileged user.
asuser="agent-getpeereid agent-ptrace"
userpassed=0
userfailed=0
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
		if ! id "$user" >/dev/null 2>&1; then
			useradd --create-home --shell /bin/sh "$user" || exit 1
		fi
		echo "$user ALL=(ALL) NOPASSWD: ALL" > /etc/sudoers.d/postern-regress
		chmod 0440 /etc/sudoers.d/postern-regress
		stage=$(mktemp -d /tmp/postern-regress-bin.XXXXXX)
		cp "$postern" "$stage/postern"
		cp "$here/run.sh" "$stage/run.sh"
		chmod 0755 "$stage" "$stage/postern" "$stage/run.sh"
		out=$(runuser -u "$user" -- env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
			HOME="$(getent passwd "$user" | cut -d: -f6)" LANG=C.UTF-8 \
			sh "$stage/run.sh" "$stage/postern" $theirs 2>&1)
		rm -rf "$stage"
		printf '%s\n' "$out" | grep -v '^regress: '
		summary=$(printf '%s\n' "$out" | grep '^regress: ' | tail -n 1)
		userpassed=$(echo "$summary" | sed -n 's/^regress: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
		userfailed=$(echo "$summary" | sed -n 's/^regress: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
		userpassed=${userpassed:-0}
		userfailed=${userfailed:-1}
	fi
	tests=$mine
	mkdir -p /run/sshd
fi

work=$(mktemp -d /tmp/postern-regress.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp -a "$suite" "$work/regress"
mkdir -p "$work/bin" "$work/xdg/config/postern" "$work/xdg/state" "$work/xdg/run"
chmod 0700 "$work/xdg/run"
cp "$postern" "$work/bin/postern"
printf 'approval = "none"\n' > "$work/xdg/config/postern/config.toml"
cat > "$work/bin/ssh-agent" <<WRAP
#!/bin/sh
XDG_CONFIG_HOME=$work/xdg/config XDG_STATE_HOME=$work/xdg/state XDG_RUNTIME_DIR=$work/xdg/run \\
	exec $work/bin/postern agent "\$@"
WRAP
chmod 0755 "$work/bin/ssh-agent"

obj=$work/regress
passed=$userpassed
failed=$userfailed
for t in $tests; do
	start=$(date +%s)
	rm -f "$work/xdg/state/postern/agent.log"
	out=$(cd "$obj" && env SUDO=sudo TEST_SHELL=sh TEST_SSH_SSH=ssh TEST_SSH_SSHAGENT="$work/bin/ssh-agent" \
		TEST_SSH_SFTPSERVER=/usr/lib/openssh/sftp-server TEST_SSH_UNSAFE_PERMISSIONS=1 \
		OBJ="$obj" BUILDDIR="$obj" sh "$obj/test-exec.sh" "$obj" "$obj/$t.sh" 2>&1 </dev/null)
	rc=$?
	secs=$(($(date +%s) - start))
	if [ $rc -eq 0 ] && ! printf '%s\n' "$out" | grep -qi 'skipped'; then
		echo "ok   $t (${secs}s)"
		passed=$((passed + 1))
	else
		echo "FAIL $t (${secs}s, exit $rc)"
		printf '%s\n' "$out" | sed 's/^/    /'
		if [ -f "$work/xdg/state/postern/agent.log" ]; then
			grep -i 'refus\|error' "$work/xdg/state/postern/agent.log" | tail -n 20 | sed 's/^/    agent.log: /'
		fi
		if [ -f "$obj/failed-regress.log" ]; then
			tail -n 40 "$obj/failed-regress.log" | sed 's/^/    regress.log: /'
			rm -f "$obj/failed-regress.log" "$obj/failed-ssh.log" "$obj/failed-sshd.log"
		fi
		failed=$((failed + 1))
	fi
done
echo "regress: $passed passed, $failed failed"
[ $failed -eq 0 ]
