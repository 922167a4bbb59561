#!/bin/sh
# A Machine Mode tool in POSIX shell, conforming but for one fault: `ping` echoes the API_KEY
# environment variable on stderr, where check 9 (redaction, §11) finds it.
set -u

TOOL=sh-leak-env
IDENT='"tool":"sh-leak-env","tool_version":"0.1.0","aoi_version":"1.0-alpha","schema_name":"io.machinemode.tests.sh-leak-env","schema_version":"1.0.0"'

output=human
words=
while [ $# -gt 0 ]; do
  case "$1" in
    --output|--format|--command)
      [ $# -ge 2 ] || { echo "error: $1 needs a value" >&2; exit 64; }
      [ "$1" = --command ] || output=$2
      shift 2 ;;
    -*) echo "error: unknown flag ${1%%=*}" >&2; exit 64 ;;
    *) words="$words${words:+ }$1"; shift ;;
  esac
done

case "$words" in
  capabilities)
    printf '%s\n' '{"tool":"sh-leak-env","tool_version":"0.1.0","aoi_versions":["1.0-alpha"],"outputs":["human","jsonl"],"schemas":[{"name":"io.machinemode.tests.sh-leak-env","versions":["1.0.0"],"default":"1.0.0"}],"commands":[{"name":"ping","read_only":true,"event_types":["pong"],"examples":[["ping"]]},{"name":"schema","read_only":true},{"name":"input-schema","read_only":true},{"name":"capabilities","read_only":true}]}' ;;
  schema)
    printf '%s\n' '{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","required":["type"],"properties":{"type":{"type":"string"}},"x-aoi":{"schema_name":"io.machinemode.tests.sh-leak-env","schema_version":"1.0.0"}}' ;;
  input-schema)
    printf '%s\n' '{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{},"additionalProperties":false,"x-aoi":{"flags":{}}}' ;;
  ping)
    # The fault: a credential from the environment, printed as it is.
    echo "$TOOL: calling the service with key ${API_KEY:-none}" >&2
    if [ "$output" = human ]; then
      echo pong
      exit 0
    fi
    run=01JZQ7X4TQ9V6H0ZT7K8F2W3C$$
    printf '{"type":"aoi:meta","aoi":{"seq":0,"run":"%s"},%s,"command":"ping"}\n' "$run" "$IDENT"
    printf '{"type":"pong","aoi":{"seq":1,"run":"%s"},"id":"pong-1"}\n' "$run"
    printf '{"type":"aoi:summary","aoi":{"seq":2,"run":"%s"},"ok":true,"event_count":3,"count":1,"warning_count":0,"error_count":0,"partial":false,"truncated":false,%s}\n' "$run" "$IDENT" ;;
  *)
    echo "error: unknown command '$words'" >&2
    exit 64 ;;
esac
