#!/usr/bin/env bash
# lint-shell.sh — `make lint`'s shell half: shellcheck -S warning (settings in
# .shellcheckrc) on every shell script in the tree, and a check of our own that
# refuses `cmd | grep -q` (and `| grep -l`, `| grep -m`, `| head -n`-style early
# exits into grep's quiet mode). Under `set -o pipefail`, grep -q exits at the
# first match; when cmd still has output to write it dies of SIGPIPE and the
# whole pipeline fails — a race the machine's timing decides (it broke the cold
# aarch64 build: objdump -a | grep -q). Write instead:
#   cmd | grep -c PATTERN >/dev/null     (grep -c reads all of its input)
#   grep -q PATTERN <<<"$(cmd)"          (a here-string)
#   grep -q PATTERN < <(cmd)             (process substitution: cmd's status is not checked)
# Checked everywhere, pipefail or not: a script that gains pipefail later
# should not inherit a race, and the Makefile's recipes are included.
set -euo pipefail
cd "$(dirname "$0")/.."

mapfile -t scripts < <(grep -rlE '^#!.*\b(ba|da)?sh\b' scripts provisioning board .ci 2>/dev/null | grep -v '\.py$' | sort)
[ ${#scripts[@]} -gt 0 ] || { echo "lint-shell: no shell scripts found" >&2; exit 1; }

status=0
shellcheck -S warning "${scripts[@]}" || status=1

# `|` then optional `!`, then grep with a q (or --quiet/--silent) among its flags.
# `||` is not a pipe: the character before the `|` must not be another `|`.
pattern='(^|[^|])\|[[:space:]]*(![[:space:]]*)?grep[[:space:]]+(-[a-zA-Z]*q[a-zA-Z]*|--quiet|--silent)([[:space:]]|$)'
while IFS= read -r hit; do
    echo "lint-shell: $hit" >&2
    echo "lint-shell:   'cmd | grep -q' fails under pipefail when grep exits first (SIGPIPE); use 'grep -c … >/dev/null' or 'grep -q … <<<\"\$(cmd)\"'" >&2
    status=1
done < <(grep -nHE "$pattern" "${scripts[@]}" Makefile || true)

[ $status = 0 ] && echo "lint-shell: ${#scripts[@]} scripts: shellcheck clean, no '| grep -q'"
exit $status
