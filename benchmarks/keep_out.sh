#!/usr/bin/env bash
# Runs a command on the lent GPU machine while copying what it writes to $OUT every few seconds, so that a call cut
# off by its limit still brings back everything the command had written (a field corpus repeat, a witness cache).
# Stop 48 lost a finished corpus repeat: the JSON was written to a tracked path, the call ran past its limit in the
# next repeat, and the machine was given back before a later call could copy it.
#
#   bash benchmarks/keep_out.sh runs/corpus.json runs/corpus.log -- \
#       python benchmarks/field_corpus.py --resume --out runs/corpus.json
#
# Paths before `--` are files or folders (under an ignored folder such as runs/, which a warm machine keeps between
# calls); each is copied into $OUT under its own name every KEEP_OUT_EVERY seconds (default 10) and once more when the
# command ends. The command's exit status is this script's.
set -u
paths=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    paths+=("$1")
    shift
done
if [ $# -eq 0 ] || [ -z "${OUT:-}" ]; then
    echo "usage: OUT=DIR keep_out.sh PATH... -- COMMAND..." >&2
    exit 2
fi
shift
copy() {
    for path in "${paths[@]}"; do
        [ -e "$path" ] && cp -r "$path" "$OUT/" 2>/dev/null
    done
    return 0
}
(while sleep "${KEEP_OUT_EVERY:-10}"; do copy; done) &
copier=$!
command_pid=""
# a limit that stops this script stops the command too, and makes one last copy
trap 'kill "$copier" $command_pid 2>/dev/null; copy; exit 143' TERM INT
"$@" &
command_pid=$!
wait "$command_pid"
status=$?
kill "$copier" 2>/dev/null
wait "$copier" 2>/dev/null
copy
exit "$status"
