#!/bin/sh
# sh-kv: a small key-value store with a Machine Mode (AOI-CLI v1.0-alpha) interface, in POSIX sh
# with coreutils, sed and awk only (no jq, no python, no aoi SDK).
#
# State, in the current directory: kv.tsv (id TAB key TAB value, one record a line) and kv.idem
# (idempotency-key TAB request TAB the event it produced). Keys and values are 1 to 64 characters
# of [A-Za-z0-9._:#-], so every one of them is a valid JSON string as it is.
#
# Events (schema io.example.sh-kv.events 1.0.0): entry {id, key, value} from list; created /
# updated {id, key, value} from put, with the record's stable id (given when the key is first
# put, kept until it is deleted); deleted {id, key} from delete. Exit status: 0 ok, 1 not found
# or conflict, 64 usage (also delete without --confirm), 65 invalid value, 130/143 interrupted.

TOOL=sh-kv
VERSION=0.2.0
SCHEMA_NAME=io.example.sh-kv.events
SCHEMA_VERSION=1.0.0
IDENT='"tool":"sh-kv","tool_version":"0.2.0","aoi_version":"1.0-alpha","schema_name":"io.example.sh-kv.events","schema_version":"1.0.0"'
STORE=kv.tsv
IDEM=kv.idem
DEFAULT_LIMIT=20
TAB=$(printf '\t')

output=human
command=
name=
value=
limit=
cursor=
ikey=
confirm=
schema_version=
which=
help=
seq=0
count=0
errors=0
run="R$(date +%s)$$"
started=

usage_text() {
  cat <<'EOF'
sh-kv - a small key-value store (Machine Mode, AOI-CLI v1.0-alpha)

Usage: sh-kv.sh [--output human|jsonl] COMMAND [OPTIONS]

Commands:
  list          List records in key order: --limit N (default 20), --cursor TOKEN
  put           Set a value: --name K --value V [--idempotency-key ID]
  delete        Delete a record (destructive): --name K --confirm
  schema        Print the event schema
  capabilities  Print the capability manifest
  input-schema  Print a command's input schema: --command NAME

Keys and values: 1 to 64 characters of A-Z a-z 0-9 . _ : # -
EOF
}

# emit TYPE FIELDS: one event line (FIELDS: the JSON members after the envelope, or empty).
emit() {
  if [ -n "$2" ]; then
    printf '{"type":"%s","aoi":{"seq":%d,"run":"%s"},%s}\n' "$1" "$seq" "$run" "$2"
  else
    printf '{"type":"%s","aoi":{"seq":%d,"run":"%s"}}\n' "$1" "$seq" "$run"
  fi
  seq=$((seq + 1))
}

meta() {
  [ "$output" = jsonl ] || return 0
  [ -z "$started" ] || return 0
  started=1
  if [ -n "$command" ]; then
    emit aoi:meta "$IDENT,\"command\":\"$command\""
  else
    emit aoi:meta "$IDENT"
  fi
}

domain() {
  meta
  count=$((count + 1))
  if [ "$output" = jsonl ]; then
    emit "$1" "$2"
  else
    echo "$3"
  fi
}

# summary OK [REASON] [EXTRA]: the terminal event (machine mode).
summary() {
  [ "$output" = jsonl ] || return 0
  meta
  fields="\"ok\":$1"
  [ -n "$2" ] && fields="$fields,\"reason\":\"$2\""
  fields="$fields,\"event_count\":$((seq + 1)),\"count\":$count,\"warning_count\":0,\"error_count\":$errors,\"partial\":false"
  [ -n "$3" ] && fields="$fields,$3"
  emit aoi:summary "$fields,$IDENT"
}

# fail CATEGORY CODE MESSAGE EXIT [REASON]: one aoi:error (stderr in human mode) and the end.
fail() {
  trap '' INT TERM
  if [ "$output" = jsonl ]; then
    meta
    errors=$((errors + 1))
    emit aoi:error "\"scope\":\"process\",\"category\":\"$1\",\"code\":\"$2\",\"domain\":\"sh-kv\",\"message\":\"$3\",\"retryable\":false"
    summary false "${5:-failed}"
  else
    echo "sh-kv: error: $3" >&2
  fi
  exit "$4"
}

usage_error() {
  fail usage "$1" "$2 Try 'sh-kv.sh --help'." 64
}

cancelled() {
  trap '' INT TERM
  summary false cancelled
  exit "$1"
}
trap 'cancelled 130' INT
trap 'cancelled 143' TERM

valid() {
  case $1 in
    '' | *[!A-Za-z0-9._:#-]*) return 1 ;;
  esac
  [ ${#1} -le 64 ]
}

# --- the command line

for a in "$@"; do
  case $a in
    --output=* | --format=*) output=${a#*=} ;;
  esac
done
prev=
for a in "$@"; do
  case $prev in
    --output | --format) output=$a ;;
  esac
  prev=$a
done
case $output in
  jsonl | json) output=jsonl ;;
  human) ;;
  *) output=human; usage_error INVALID_OUTPUT "--output takes human or jsonl." ;;
esac

while [ $# -gt 0 ]; do
  arg=$1
  shift
  case $arg in
    --*=*) flag=${arg%%=*}; val=${arg#*=}; inline=1 ;;
    *) flag=$arg; val=; inline= ;;
  esac
  case $flag in
    --output | --format | --name | --value | --limit | --cursor | --idempotency-key | --schema-version | --command)
      if [ -z "$inline" ]; then
        [ $# -gt 0 ] || usage_error MISSING_VALUE "An option needs a value."
        val=$1
        shift
      fi
      ;;
    --confirm | --help | -h | --no-color)
      [ -z "$inline" ] || usage_error UNEXPECTED_VALUE "A switch takes no value."
      ;;
  esac
  case $flag in
    --output | --format | --no-color) ;;
    --help | -h) help=1 ;;
    --schema-version) schema_version=$val ;;
    --name) name=$val; allowed="put delete" ;;
    --value) value=$val; allowed="put" ;;
    --limit) limit=$val; allowed="list" ;;
    --cursor) cursor=$val; allowed="list" ;;
    --idempotency-key) ikey=$val; allowed="put" ;;
    --confirm) confirm=1; allowed="delete" ;;
    --command) which=$val; allowed="input-schema" ;;
    -*) usage_error UNKNOWN_OPTION "Unknown option." ;;
    *)
      if [ -z "$command" ]; then
        case $arg in
          list | put | delete | schema | capabilities | input-schema) command=$arg ;;
          *) usage_error UNKNOWN_COMMAND "Unknown command; expected list, put, delete, schema, capabilities or input-schema." ;;
        esac
        continue
      fi
      usage_error UNEXPECTED_OPERAND "sh-kv takes no operands."
      ;;
  esac
  case $flag in
    --name | --value | --limit | --cursor | --idempotency-key | --confirm | --command)
      case " $allowed " in
        *" $command "*) ;;
        *) usage_error UNKNOWN_OPTION "Unknown option for this command." ;;
      esac
      ;;
  esac
done

if [ -n "$help" ]; then
  usage_text
  exit 0
fi
[ -n "$command" ] || usage_error MISSING_COMMAND "No command given."
case $schema_version in
  '' | 1 | 1.0 | 1.0.0) ;;
  *) fail unsupported SCHEMA_VERSION_UNSUPPORTED "This tool serves event schema version 1.0.0 only." 1 ;;
esac

# --- discovery

props_version='"schema_version":{"type":"string","enum":["1","1.0.0"],"description":"Event schema version"}'
case $command in
  schema)
    rec='{"type":"object","required":["id","key","value"],"properties":{"id":{"type":"string","pattern":"^kv-[0-9a-f]+$"},"key":{"type":"string"},"value":{"type":"string"}}}'
    err='{"type":"object","required":["category","code","message","retryable"],"properties":{"category":{"type":"string"},"code":{"type":"string","pattern":"^[A-Z][A-Z0-9_]*$"},"message":{"type":"string"},"retryable":{"type":"boolean"},"retry_after_ms":{"type":"integer","minimum":0}}}'
    sum='{"type":"object","required":["ok","event_count","count","tool","tool_version","aoi_version","schema_name","schema_version"],"properties":{"ok":{"type":"boolean"},"reason":{"enum":["failed","cancelled","timeout","denied","skipped"]},"event_count":{"type":"integer","minimum":1},"count":{"type":"integer","minimum":0},"truncated":{"type":"boolean"},"next_cursor":{"type":["string","null"]}}}'
    meta_s='{"type":"object","required":["tool","tool_version","aoi_version","schema_name","schema_version"]}'
    del='{"type":"object","required":["id","key"],"properties":{"id":{"type":"string"},"key":{"type":"string"}}}'
    printf '{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"https://schemas.example.com/sh-kv/events/1.0.0/schema.json","title":"sh-kv events 1.0.0","type":"object","required":["type","aoi"],"properties":{"type":{"type":"string"},"aoi":{"type":"object","required":["seq","run"],"properties":{"seq":{"type":"integer","minimum":0},"run":{"type":"string"}}}},"allOf":['
    printf '{"if":{"properties":{"type":{"const":"aoi:meta"}}},"then":%s},' "$meta_s"
    printf '{"if":{"properties":{"type":{"const":"aoi:summary"}}},"then":%s},' "$sum"
    printf '{"if":{"properties":{"type":{"const":"aoi:error"}}},"then":%s},' "$err"
    printf '{"if":{"properties":{"type":{"enum":["entry","created","updated"]}}},"then":%s},' "$rec"
    printf '{"if":{"properties":{"type":{"const":"deleted"}}},"then":%s}]}\n' "$del"
    exit 0
    ;;
  capabilities)
    fw='"aoi:meta","aoi:error","aoi:summary"'
    setup='[["put","--name","a","--value","1"],["put","--name","b","--value","2"],["put","--name","c","--value","3"]]'
    printf '{"tool":"sh-kv","tool_version":"0.2.0","aoi_versions":["1.0-alpha"],"outputs":["human","jsonl"],"machine_flag":["--output","jsonl"],"schemas":[{"name":"io.example.sh-kv.events","versions":["1.0.0"],"default":"1.0.0"}],"commands":['
    printf '{"name":"list","summary":"List records in key order, bounded","read_only":true,"bounded":true,"supports_cursor":true,"event_types":[%s,"entry"],"examples":[["list"]],"setup":%s},' "$fw" "$setup"
    printf '{"name":"put","summary":"Set a value; reports its stable id","read_only":false,"supports_idempotency_key":true,"event_types":[%s,"created","updated"],"examples":[["put","--name","a","--value","1"]]},' "$fw"
    printf '{"name":"delete","summary":"Delete a record (destructive: needs --confirm)","read_only":false,"destructive":true,"requires_confirm":true,"event_types":[%s,"deleted"],"examples":[["delete","--name","a","--confirm"]],"setup":%s}]}\n' "$fw" "$setup"
    exit 0
    ;;
  input-schema)
    case $which in
      list) props='"limit":{"type":"integer","minimum":1,"maximum":1000,"default":20},"cursor":{"type":"string"}'; req='[]' ;;
      put) props='"name":{"type":"string","description":"The record'"'"'s key"},"value":{"type":"string"},"idempotency_key":{"type":"string","minLength":1}'; req='["name","value"]' ;;
      delete) props='"name":{"type":"string","description":"The record'"'"'s key"},"confirm":{"type":"boolean","default":false}'; req='["name"]' ;;
      *) usage_error UNKNOWN_COMMAND "input-schema --command takes list, put or delete." ;;
    esac
    printf '{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"sh-kv %s","type":"object","additionalProperties":false,"properties":{%s,%s},"required":%s}\n' "$which" "$props" "$props_version" "$req"
    exit 0
    ;;
esac

# --- commands

[ -f "$STORE" ] || : # a missing store reads as empty

lookup() { # lookup KEY: prints "id TAB key TAB value" of KEY's record
  [ -f "$STORE" ] || return 1
  awk -F '\t' -v k="$1" '$2 == k { print; found = 1 } END { exit !found }' "$STORE"
}

case $command in
  list)
    limit=${limit:-$DEFAULT_LIMIT}
    case $limit in
      '' | *[!0-9]* | 0) usage_error INVALID_LIMIT "--limit takes 1 to 1000." ;;
    esac
    [ "$limit" -le 1000 ] || usage_error INVALID_LIMIT "--limit takes 1 to 1000."
    after=
    if [ -n "$cursor" ]; then
      case $cursor in
        after:*) after=${cursor#after:} ;;
        *) fail validation INVALID_CURSOR "The cursor is not one sh-kv issued." 65 ;;
      esac
      valid "$after" || fail validation INVALID_CURSOR "The cursor is not one sh-kv issued." 65
    fi
    meta
    page=$( [ -f "$STORE" ] && LC_ALL=C sort -t "$TAB" -k2,2 "$STORE" | awk -F '\t' -v a="$after" 'a == "" || $2 > a')
    total=$(printf '%s' "$page" | awk 'NF { n++ } END { print n + 0 }')
    shown=0
    last=
    old_ifs=$IFS
    IFS='
'
    for line in $page; do
      [ "$shown" -lt "$limit" ] || break
      IFS=$TAB read -r id key val <<EOF
$line
EOF
      domain entry "\"id\":\"$id\",\"key\":\"$key\",\"value\":\"$val\"" "$key = $val"
      shown=$((shown + 1))
      last=$key
    done
    IFS=$old_ifs
    if [ "$total" -gt "$shown" ]; then
      next="after:$last"
      [ "$output" = jsonl ] || echo "(more: sh-kv.sh list --cursor $next)"
      summary true "" "\"truncated\":true,\"next_cursor\":\"$next\""
    else
      summary true "" '"truncated":false,"next_cursor":null'
    fi
    ;;
  put)
    [ -n "$name" ] && [ -n "$value" ] || usage_error MISSING_OPTION "put needs --name and --value."
    valid "$name" || fail validation INVALID_KEY "A key is 1 to 64 characters of A-Z a-z 0-9 . _ : # -." 65
    valid "$value" || fail validation INVALID_VALUE "A value is 1 to 64 characters of A-Z a-z 0-9 . _ : # -." 65
    if [ -n "$ikey" ]; then
      valid "$ikey" || fail validation INVALID_IDEMPOTENCY_KEY "An idempotency key is 1 to 64 characters of A-Z a-z 0-9 . _ : # -." 65
      prior=$( [ -f "$IDEM" ] && awk -F '\t' -v k="$ikey" '$1 == k { print $2 "\t" $3 "\t" $4; exit }' "$IDEM")
      if [ -n "$prior" ]; then
        if [ "${prior%%"$TAB"*}" != "$name=$value" ]; then
          fail conflict IDEMPOTENCY_KEY_REUSED "This idempotency key was already used for a different request." 1
        fi
        replay=${prior#*"$TAB"}
        meta
        count=1
        if [ "$output" = jsonl ]; then
          emit "${replay%%"$TAB"*}" "${replay#*"$TAB"}"
        else
          echo "${replay%%"$TAB"*} $name (replayed)"
        fi
        summary true
        exit 0
      fi
    fi
    old=$(lookup "$name")
    if [ -n "$old" ]; then
      id=${old%%"$TAB"*}
      kind=updated
    else
      id="kv-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
      kind=created
    fi
    fields="\"id\":\"$id\",\"key\":\"$name\",\"value\":\"$value\""
    trap '' INT TERM
    tmp=$(mktemp ./.kv.XXXXXX) || fail io STORE_WRITE_FAILED "The store cannot be written." 73
    { [ -f "$STORE" ] && awk -F '\t' -v k="$name" '$2 != k' "$STORE"; printf '%s\t%s\t%s\n' "$id" "$name" "$value"; } > "$tmp"
    mv "$tmp" "$STORE"
    [ -z "$ikey" ] || printf '%s\t%s\t%s\t%s\n' "$ikey" "$name=$value" "$kind" "$fields" >> "$IDEM"
    domain "$kind" "$fields" "$kind $name"
    summary true
    ;;
  delete)
    [ -n "$name" ] || usage_error MISSING_OPTION "delete needs --name."
    if [ -z "$confirm" ]; then
      fail usage CONFIRM_REQUIRED "delete is destructive and needs --confirm." 64 denied
    fi
    valid "$name" || fail validation INVALID_KEY "A key is 1 to 64 characters of A-Z a-z 0-9 . _ : # -." 65
    old=$(lookup "$name") || fail not_found KEY_NOT_FOUND "No record has this key." 1
    id=${old%%"$TAB"*}
    trap '' INT TERM
    tmp=$(mktemp ./.kv.XXXXXX) || fail io STORE_WRITE_FAILED "The store cannot be written." 73
    awk -F '\t' -v k="$name" '$2 != k' "$STORE" > "$tmp"
    mv "$tmp" "$STORE"
    domain deleted "\"id\":\"$id\",\"key\":\"$name\"" "deleted $name"
    summary true
    ;;
esac
exit 0
