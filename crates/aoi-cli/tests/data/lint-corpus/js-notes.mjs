#!/usr/bin/env node
// js-notes: a small notes store with a Machine Mode interface (AOI-CLI v1.0-alpha), written in
// plain JavaScript for Node 20+ with no dependencies, from the text of the specification alone.
//
// A note has a title, an optional body and a slug made from its title (lower case ASCII letters
// and digits joined by single hyphens): the slug is the note's key, given to `get` and `rm`, and
// reported in every event about the note. The notes live in one JSON file,
// $XDG_DATA_HOME/js-notes/notes.json (else $HOME/.local/share/js-notes/notes.json).
//
// Human output by default; `--output jsonl` (or `--format jsonl`) selects machine mode, a stream
// of AOI events on stdout. `js-notes --help` documents the commands, the exit statuses and the
// compatibility rules of the machine output.
//
// `main(fault)` runs the tool; the files `js-notes-<fault>.mjs` each run it with one deliberate
// departure from the specification, for testing conformance checkers:
//
// - relay-prose: `import`, when it passes on a warning, also prints a prose line on stdout
//   (§2: machine-mode stdout MUST NOT include mixed plain-text warnings).
// - confirm-count: `rm --confirm-count N` goes ahead when N is larger than the number of notes
//   matched (§14.3: the guard against accidental broad deletes).
// - secret-escaped: the `args` of aoi:meta carry `--token` JSON-escaped instead of redacted
//   (§11: if arguments are included, the tool MUST redact sensitive values).
// - full-page: `list` says `truncated:false`, with no cursor, when its page is full and more
//   notes follow (§15: if output is truncated, aoi:summary.truncated MUST be true).
// - verbose-meta: with `--verbose`, a second aoi:meta follows the first (§13.1: a stream
//   carries at most one aoi:meta).

import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const TOOL = "js-notes";
const TOOL_VERSION = "1.0.0";
const AOI_VERSION = "1.0-alpha";
const SCHEMA_NAME = "io.example.js-notes.events";
const SCHEMA_VERSION = "1.0.0";
const SCHEMA_ID = "https://schemas.example.org/js-notes/events/1.0.0/schema.json";

const LIST_DEFAULT_LIMIT = 20;
const LIST_MAX_LIMIT = 1000;
const TITLE_MAX = 200;
const BODY_MAX = 10000;
const SLUG_MAX = 64;
const IDEMPOTENCY_KEY_MAX = 200;
const WRITE_TOKEN_ENV = "JS_NOTES_WRITE_TOKEN";
const REDACTED = "[REDACTED]";

const CATEGORIES = [
  "usage", "validation", "config", "authn", "authz", "not_found", "conflict",
  "precondition_failed", "unsupported", "rate_limited", "unavailable", "timeout",
  "cancelled", "io", "internal",
];
const RETRYABLE_BY_DEFAULT = new Set(["rate_limited", "unavailable", "timeout"]);
// Exit statuses (sysexits where one fits, §6); every other failure exits 1.
const EXIT_FOR = {
  usage: 64, validation: 65, config: 78, authn: 77, authz: 77, unavailable: 69,
  internal: 70, io: 74, rate_limited: 75, timeout: 124, cancelled: 130,
};
const FRAMEWORK_TYPES = new Set([
  "aoi:meta", "aoi:summary", "aoi:warning", "aoi:error", "aoi:heartbeat", "aoi:plan",
  "aoi:check", "aoi:progress",
]);
// §11: an option whose name contains one of these is never echoed.
const SENSITIVE = [
  "token", "secret", "password", "passwd", "key", "credential", "cookie", "authorization",
  "auth", "bearer", "private", "client-secret",
];
const SENSITIVE_QUERY = new Set(["sig", "token", "access_token", "code", "key", "signature"]);

let FAULT = "clean";

// ---------------------------------------------------------------------------------------------
// Errors

class NotesError extends Error {
  constructor(category, code, message, fields = {}) {
    super(message);
    this.category = category;
    this.code = code;
    this.retryable = fields.retryable ?? RETRYABLE_BY_DEFAULT.has(category);
    this.exitCode = fields.exitCode ?? EXIT_FOR[category] ?? 1;
    this.fields = {};
    for (const name of ["target", "field", "hint", "line_number", "item_index"]) {
      if (fields[name] !== undefined) this.fields[name] = fields[name];
    }
  }

  event(scope = "process") {
    return {
      type: "aoi:error", scope, category: this.category, code: this.code, domain: TOOL,
      message: this.message, retryable: this.retryable, ...this.fields,
    };
  }
}

function usage(code, message, fields = {}) {
  return new NotesError("usage", code, message, { hint: "js-notes --help", ...fields });
}

// The stdout reader went away (EPIPE): end quietly, nothing more can be said there.
class PipeClosed extends Error {}

// ---------------------------------------------------------------------------------------------
// Writing

function sleepMs(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

// Writes all of `text` to `fd`, synchronously, retrying a non-blocking pipe that is full.
function writeAll(fd, text) {
  const buf = Buffer.from(text, "utf8");
  let off = 0;
  while (off < buf.length) {
    try {
      off += fs.writeSync(fd, buf, off, buf.length - off);
    } catch (err) {
      if (err.code === "EAGAIN") {
        sleepMs(1);
        continue;
      }
      if (err.code === "EPIPE") throw new PipeClosed();
      throw err;
    }
  }
}

function diagnostic(text) {
  try {
    writeAll(2, `${TOOL}: ${text}\n`);
  } catch {
    // stderr is gone too: nothing else to tell.
  }
}

// ---------------------------------------------------------------------------------------------
// The event stream

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

function ulid() {
  let n = (BigInt(Date.now()) << 80n) | BigInt(`0x${randomBytes(10).toString("hex")}`);
  let out = "";
  for (let i = 0; i < 26; i++) {
    out = CROCKFORD[Number(n & 31n)] + out;
    n >>= 5n;
  }
  return out;
}

function identity() {
  return {
    tool: TOOL, tool_version: TOOL_VERSION, aoi_version: AOI_VERSION,
    schema_name: SCHEMA_NAME, schema_version: SCHEMA_VERSION,
  };
}

// One run's AOI JSONL stream (machine mode) or its human rendering.
class Output {
  constructor(machine) {
    this.machine = machine;
    this.run = ulid();
    this.seq = 0;
    this.started = false;
    this.finished = false;
    this.startedAt = Date.now();
    this.count = 0;
    this.warnings = 0;
    this.errors = 0;
    this.secretLiterals = [];
  }

  line(event) {
    const { type, ...rest } = event;
    const full = { type, aoi: { seq: this.seq, run: this.run }, ...rest };
    let text = JSON.stringify(full);
    // The secret-escaped fault: a secret in `args` written with every character escaped.
    for (const [placeholder, secret] of this.secretLiterals) {
      const escaped = [...secret]
        .map((c) => `\\u${c.codePointAt(0).toString(16).padStart(4, "0")}`)
        .join("");
      text = text.split(JSON.stringify(placeholder)).join(`"${escaped}"`);
    }
    writeAll(1, `${text}\n`);
    this.seq += 1;
  }

  start(command, args) {
    if (this.started) return;
    this.started = true;
    this.command = command;
    if (!this.machine) return;
    const meta = { type: "aoi:meta", ...identity(), args_redacted: true };
    if (command) meta.command = command;
    if (args && Object.keys(args).length > 0) meta.args = args;
    this.line(meta);
    if (FAULT === "verbose-meta" && args && args.verbose) this.line(meta);
  }

  // A domain event (`render` gives its human line).
  domain(event, render) {
    this.count += 1;
    if (this.machine) this.line(event);
    else if (render) writeAll(1, `${render}\n`);
  }

  plan(properties, render) {
    if (this.machine) this.line({ type: "aoi:plan", properties });
    else writeAll(1, `would ${render}\n`);
  }

  warning(code, message, extra = {}) {
    this.warnings += 1;
    if (this.machine) {
      const event = { type: "aoi:warning", code, message };
      if (extra.origin) event.origin = extra.origin;
      if (extra.properties) event.properties = extra.properties;
      this.line(event);
    } else {
      diagnostic(`warning: ${message}`);
    }
  }

  // A forwarded upstream event (§13.1), already tagged with `origin`.
  forward(event) {
    if (event.type === "aoi:warning") this.warnings += 1;
    else this.errors += 1;
    if (this.machine) this.line(event);
    else diagnostic(`upstream ${event.origin}: ${event.type.slice(4)}: ${oneLine(event.message)}`);
  }

  error(err, scope = "process") {
    this.errors += 1;
    if (this.machine) this.line(err.event(scope));
    else diagnostic(`error: ${err.message}`);
  }

  finish(outcome) {
    if (this.finished) return;
    this.finished = true;
    if (!this.machine) return;
    const summary = { type: "aoi:summary", ok: outcome.ok };
    if (!outcome.ok) summary.reason = outcome.reason ?? "failed";
    summary.event_count = this.seq + 1;
    summary.count = this.count;
    if (outcome.inputCount !== undefined) summary.input_count = outcome.inputCount;
    summary.warning_count = this.warnings;
    summary.error_count = this.errors;
    summary.partial = outcome.partial ?? false;
    summary.truncated = outcome.truncated ?? false;
    if (outcome.paged) summary.next_cursor = outcome.nextCursor ?? null;
    summary.elapsed_ms = Date.now() - this.startedAt;
    if (outcome.causedBy) summary.caused_by = outcome.causedBy;
    if (outcome.upstream) summary.upstream = outcome.upstream;
    Object.assign(summary, identity());
    if (outcome.properties) summary.properties = outcome.properties;
    this.line(summary);
  }
}

function oneLine(text) {
  return String(text ?? "").replace(/[\u0000-\u001f\u007f-\u009f]+/g, " ").trim();
}

// ---------------------------------------------------------------------------------------------
// Commands and their options: one table for parsing, help and the input schemas.

const GLOBAL_OPTIONS = {
  output: { type: "string", value: "FORMAT", help: "jsonl (machine mode), json (discovery) or text (the default)" },
  format: { type: "string", value: "FORMAT", help: "same as --output" },
  "schema-version": { type: "string", value: "VERSION", help: `event schema version: ${SCHEMA_VERSION} (also 1, 1.0)` },
  "no-color": { type: "boolean", help: "no colour (js-notes never colours its output)" },
  verbose: { type: "boolean", help: "report the store's location on stderr" },
  help: { type: "boolean", help: "this help" },
  version: { type: "boolean", help: "the tool version" },
};

const MUTATION_OPTIONS = {
  "dry-run": { type: "boolean", help: "report the planned changes as aoi:plan events; change nothing" },
  token: {
    type: "string", value: "TOKEN", secret: true,
    help: `the write token, needed when the store is protected (${WRITE_TOKEN_ENV} is set)`,
  },
};

const COMMANDS = {
  add: {
    summary: "Add a note. Its slug is made from its title.",
    operands: [{
      name: "title", required: true,
      description: "The note's title (the operand after `add`). The note's slug, its key, is made from it: lower case letters and digits joined by hyphens.",
    }],
    options: {
      body: { type: "string", value: "TEXT", help: "the note's text" },
      ...MUTATION_OPTIONS,
      "idempotency-key": {
        type: "string", value: "KEY",
        help: "retry key: a repeat with the same key and the same title and body reports the first result again and adds nothing",
      },
    },
    capabilities: {
      read_only: false, destructive: false, supports_dry_run: true,
      supports_idempotency_key: true,
      event_types: ["aoi:meta", "added", "aoi:plan", "aoi:warning", "aoi:error", "aoi:summary"],
    },
  },
  get: {
    summary: "Show one note.",
    operands: [{ name: "slug", required: true, description: "The note's slug (the operand after `get`)." }],
    options: {},
    capabilities: {
      read_only: true, bounded: true,
      event_types: ["aoi:meta", "note", "aoi:error", "aoi:summary"],
    },
  },
  list: {
    summary: "List notes by slug, a page at a time.",
    operands: [],
    options: {
      limit: { type: "integer", value: "N", help: `notes per page, 1 to ${LIST_MAX_LIMIT} (default ${LIST_DEFAULT_LIMIT})` },
      cursor: { type: "string", value: "CURSOR", help: "continue after the page that gave this next_cursor" },
    },
    capabilities: {
      read_only: true, bounded: true, supports_cursor: true, default_limit: LIST_DEFAULT_LIMIT,
      event_types: ["aoi:meta", "note", "aoi:error", "aoi:summary"],
    },
  },
  rm: {
    summary: "Remove notes. Needs --confirm; more than one note also needs --confirm-count.",
    operands: [{
      name: "slugs", required: true, variadic: true,
      description: "The slugs of the notes to remove (the operands after `rm`).",
    }],
    options: {
      confirm: { type: "boolean", help: "really remove (without it, nothing is removed)" },
      "confirm-count": {
        type: "integer", value: "N",
        help: "the number of notes that will be removed; required when more than one slug is given; a different number removes nothing",
      },
      ...MUTATION_OPTIONS,
    },
    capabilities: {
      read_only: false, destructive: true, requires_confirm: true, supports_confirm_count: true,
      supports_dry_run: true,
      event_types: ["aoi:meta", "removed", "aoi:plan", "aoi:error", "aoi:summary"],
    },
  },
  import: {
    summary: "Add the notes read as JSONL records on stdin (e.g. the output of `js-notes list --output jsonl`).",
    operands: [],
    options: {
      "input-jsonl": { type: "string", value: "-", help: "read JSONL records from stdin (only `-`)" },
      "fail-fast": { type: "boolean", help: "a malformed line aborts the whole import before anything is added (the default)" },
      "continue-on-error": {
        type: "boolean",
        help: "a malformed line is reported as an item error and the other records are imported; upstream errors no longer fail the run",
      },
      ...MUTATION_OPTIONS,
    },
    capabilities: {
      read_only: false, destructive: false, supports_dry_run: true,
      input_modes: ["jsonl"],
      malformed_input: {
        policy: "configurable", default: "fail-fast",
        options: ["--fail-fast", "--continue-on-error"],
      },
      event_types: ["aoi:meta", "added", "aoi:plan", "aoi:warning", "aoi:error", "aoi:summary"],
    },
  },
};

const DISCOVERY = {
  schema: { summary: "Print the JSON Schema of the events.", options: {} },
  capabilities: { summary: "Print what js-notes can do, as one JSON object.", options: {} },
  "input-schema": {
    summary: "Print the JSON Schema of a command's input.",
    options: { command: { type: "string", value: "COMMAND", help: "the command" } },
  },
};

function optionsOf(command) {
  const spec = COMMANDS[command] ?? DISCOVERY[command];
  return { ...GLOBAL_OPTIONS, ...(spec ? spec.options : {}) };
}

function propertyName(flag) {
  return flag.replaceAll("-", "_");
}

// ---------------------------------------------------------------------------------------------
// Parsing

// The output format asked for, read before anything else so that a usage error is reported in
// the right mode.
function outputFormat(argv) {
  let format = "text";
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--output" || a === "--format") {
      if (i + 1 < argv.length) format = argv[i + 1];
      i += 1;
    } else if (a.startsWith("--output=") || a.startsWith("--format=")) {
      format = a.slice(a.indexOf("=") + 1);
    }
  }
  return format;
}

function ordinal(n) {
  return ["first", "second", "third"][n - 1] ?? `${n}th`;
}

// Parses argv into { command, operands, options }; throws a usage NotesError. Messages never
// repeat a value from the command line: an unknown flag may be carrying a secret.
function parse(argv, seen = {}) {
  let command = null;
  const operands = [];
  const options = {};
  const optionLine = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--") {
      throw usage("UNKNOWN_ARGUMENT", "`--` is not an argument js-notes knows; operands are given as they are");
    }
    if (arg === "-h") {
      options.help = true;
      continue;
    }
    if (arg.startsWith("--")) {
      const eq = arg.indexOf("=");
      const flag = eq >= 0 ? arg.slice(2, eq) : arg.slice(2);
      const known = optionsOf(command);
      const spec = known[flag];
      if (!spec || !/^[a-z][a-z-]*$/.test(flag)) {
        const name = /^[A-Za-z0-9-]{1,40}$/.test(flag) ? `--${flag}` : "an option";
        throw usage("UNKNOWN_OPTION", command
          ? `${name} is not an option of \`${command}\``
          : `${name} is not an option js-notes knows before a command`);
      }
      let value;
      if (spec.type === "boolean") {
        if (eq >= 0) throw usage("UNEXPECTED_VALUE", `--${flag} takes no value`, { field: propertyName(flag) });
        value = true;
      } else {
        if (eq >= 0) value = arg.slice(eq + 1);
        else if (i + 1 < argv.length) value = argv[++i];
        else throw usage("MISSING_VALUE", `--${flag} needs a value`, { field: propertyName(flag) });
        if (spec.type === "integer") {
          if (!/^[0-9]{1,9}$/.test(value)) {
            throw usage("INVALID_NUMBER", `--${flag} takes a whole number`, { field: propertyName(flag) });
          }
          value = Number(value);
        }
      }
      if (flag in optionLine && spec.type !== "boolean") {
        throw usage("REPEATED_OPTION", `--${flag} is given more than once`, { field: propertyName(flag) });
      }
      optionLine[flag] = i;
      options[propertyName(flag)] = value;
      continue;
    }
    if (arg.startsWith("-") && arg !== "-") {
      throw usage("UNKNOWN_OPTION", "short options other than -h are not known to js-notes");
    }
    if (command === null) {
      if (!(arg in COMMANDS) && !(arg in DISCOVERY)) {
        throw usage("UNKNOWN_COMMAND", "that is not a js-notes command (see js-notes --help)");
      }
      command = arg;
      seen.command = arg;
    } else {
      operands.push(arg);
    }
  }
  return { command, operands, options };
}

// Binds the operands of `command` to its operand names; throws a usage error.
function bindOperands(command, operands, options) {
  const spec = COMMANDS[command] ?? { operands: [] };
  const declared = spec.operands ?? [];
  const bound = {};
  let at = 0;
  for (const op of declared) {
    if (op.variadic) {
      bound[op.name] = operands.slice(at);
      at = operands.length;
      if (op.required && bound[op.name].length === 0) {
        throw usage("MISSING_OPERAND", `\`${command}\` needs at least one ${op.name.replace(/s$/, "")}`, { field: op.name });
      }
    } else if (at < operands.length) {
      bound[op.name] = operands[at++];
    } else if (op.required) {
      throw usage("MISSING_OPERAND", `\`${command}\` needs its ${op.name}`, { field: op.name });
    }
  }
  if (at < operands.length) {
    throw usage("UNEXPECTED_OPERAND", `\`${command ?? "js-notes"}\` takes no ${ordinal(at + 1)} operand`);
  }
  return { ...bound, ...options };
}

// The arguments as reported in aoi:meta: sensitive options and URL secrets redacted (§11).
function reportedArgs(args, out) {
  const reported = {};
  for (const [name, value] of Object.entries(args)) {
    const sensitive = SENSITIVE.some((s) => name.replaceAll("_", "-").includes(s));
    if (sensitive) {
      if (FAULT === "secret-escaped" && typeof value === "string") {
        const placeholder = `\u0000secret-${out.secretLiterals.length}\u0000`;
        out.secretLiterals.push([placeholder, value]);
        reported[name] = placeholder;
      } else {
        reported[name] = REDACTED;
      }
    } else if (typeof value === "string") {
      reported[name] = redactUrls(value);
    } else if (Array.isArray(value)) {
      reported[name] = value.map((v) => (typeof v === "string" ? redactUrls(v) : v));
    } else {
      reported[name] = value;
    }
  }
  return reported;
}

// Credentials and secret query values of every URL in `text`, redacted.
function redactUrls(text) {
  return text.replace(/\b[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^\s"'<>]+/g, (url) => {
    let u;
    try {
      u = new URL(url);
    } catch {
      return REDACTED;
    }
    if (u.username || u.password) {
      u.username = "REDACTED";
      u.password = "";
    }
    for (const key of [...u.searchParams.keys()]) {
      if (SENSITIVE_QUERY.has(key.toLowerCase()) || SENSITIVE.some((s) => key.toLowerCase().includes(s))) {
        u.searchParams.set(key, "REDACTED");
      }
    }
    return u.toString();
  });
}

// ---------------------------------------------------------------------------------------------
// The store

function dataDir() {
  const xdg = process.env.XDG_DATA_HOME;
  if (xdg && path.isAbsolute(xdg)) return path.join(xdg, TOOL);
  const home = process.env.HOME;
  if (home && path.isAbsolute(home)) return path.join(home, ".local", "share", TOOL);
  throw new NotesError("config", "NO_DATA_DIR", "neither XDG_DATA_HOME nor HOME is set to an absolute path, so js-notes has nowhere to keep its notes");
}

function storePath() {
  return path.join(dataDir(), "notes.json");
}

function loadStore() {
  const file = storePath();
  let text;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (err) {
    if (err.code === "ENOENT") return { notes: {}, idempotency: {} };
    throw new NotesError("io", "STORE_UNREADABLE", `the notes file cannot be read (${err.code ?? "error"})`, { target: file });
  }
  let data;
  try {
    data = JSON.parse(text);
  } catch {
    throw new NotesError("io", "STORE_CORRUPT", "the notes file is not valid JSON", { target: file });
  }
  if (!data || typeof data !== "object" || typeof data.notes !== "object" || data.notes === null) {
    throw new NotesError("io", "STORE_CORRUPT", "the notes file does not hold a notes object", { target: file });
  }
  data.idempotency ??= {};
  return data;
}

function saveStore(data) {
  const file = storePath();
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, `${JSON.stringify(data, null, 1)}\n`);
    fs.renameSync(tmp, file);
  } catch (err) {
    throw new NotesError("io", "STORE_UNWRITABLE", `the notes file cannot be written (${err.code ?? "error"})`, { target: file });
  }
}

function slugify(title) {
  return title
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, SLUG_MAX)
    .replace(/-+$/, "");
}

const SLUG_RE = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

function checkSlug(slug, field) {
  if (typeof slug !== "string" || slug.length > SLUG_MAX || !SLUG_RE.test(slug)) {
    throw new NotesError("validation", "INVALID_SLUG", "a slug is lower case letters and digits joined by single hyphens, at most 64 characters", { field });
  }
}

function checkTitle(title, field = "title") {
  if (typeof title !== "string" || title.trim() === "") {
    throw new NotesError("validation", "EMPTY_TITLE", "a note needs a title", { field });
  }
  if ([...title].length > TITLE_MAX) {
    throw new NotesError("validation", "TITLE_TOO_LONG", `a title has at most ${TITLE_MAX} characters`, { field });
  }
  if (/[\u0000-\u001f\u007f]/.test(title)) {
    throw new NotesError("validation", "TITLE_HAS_CONTROLS", "a title is one line without control characters", { field });
  }
  const slug = slugify(title);
  if (!slug) {
    throw new NotesError("validation", "TITLE_HAS_NO_SLUG", "a title needs at least one letter or digit to make a slug from", { field });
  }
  return slug;
}

function checkBody(body) {
  if (body !== undefined && [...body].length > BODY_MAX) {
    throw new NotesError("validation", "BODY_TOO_LONG", `a body has at most ${BODY_MAX} characters`, { field: "body" });
  }
}

// §1.3 has no prompt here: a protected store takes its token from --token only.
function checkWriteToken(args) {
  const expected = process.env[WRITE_TOKEN_ENV];
  if (!expected) return;
  if (args.token === undefined) {
    throw new NotesError("authn", "TOKEN_REQUIRED", "the store is protected: give its write token with --token", { hint: "js-notes --help" });
  }
  const a = createHash("sha256").update(args.token).digest();
  const b = createHash("sha256").update(expected).digest();
  if (!timingSafeEqual(a, b)) {
    throw new NotesError("authz", "TOKEN_REJECTED", "the write token given with --token is not the store's");
  }
}

function noteEvent(type, note) {
  const event = { type, slug: note.slug, title: note.title };
  if (note.body !== undefined) event.body = note.body;
  event.created_at = note.created_at;
  return event;
}

function now() {
  return new Date().toISOString();
}

// ---------------------------------------------------------------------------------------------
// Commands

function cmdAdd(args, out) {
  const slug = checkTitle(args.title);
  checkBody(args.body);
  const key = args.idempotency_key;
  if (key !== undefined && (key.length === 0 || key.length > IDEMPOTENCY_KEY_MAX)) {
    throw new NotesError("validation", "INVALID_IDEMPOTENCY_KEY", `an idempotency key has 1 to ${IDEMPOTENCY_KEY_MAX} characters`, { field: "idempotency_key" });
  }
  checkWriteToken(args);
  const store = loadStore();
  const request = createHash("sha256")
    .update(JSON.stringify(["add", args.title, args.body ?? null]))
    .digest("hex");
  const keyId = key === undefined ? undefined : createHash("sha256").update(key).digest("hex");
  if (keyId !== undefined && store.idempotency[keyId]) {
    const prior = store.idempotency[keyId];
    if (prior.request !== request) {
      throw new NotesError("conflict", "IDEMPOTENCY_KEY_REUSED", "this idempotency key was used for a different note", { field: "idempotency_key" });
    }
    out.domain(noteEvent("added", prior.note), `added ${prior.note.slug} (replayed)`);
    return { ok: true, properties: { replayed: true } };
  }
  if (store.notes[slug]) {
    throw new NotesError("conflict", "NOTE_EXISTS", "a note with this slug exists already", { target: slug });
  }
  const note = { slug, title: args.title };
  if (args.body !== undefined) note.body = args.body;
  note.created_at = now();
  if (args.dry_run) {
    out.plan({ action: "add", slug, title: args.title }, `add ${slug}`);
    return { ok: true, properties: { dry_run: true } };
  }
  store.notes[slug] = note;
  if (keyId !== undefined) store.idempotency[keyId] = { request, note, at: note.created_at };
  saveStore(store);
  out.domain(noteEvent("added", note), `added ${slug}`);
  return { ok: true };
}

function cmdGet(args, out) {
  checkSlug(args.slug, "slug");
  const note = loadStore().notes[args.slug];
  if (!note) {
    throw new NotesError("not_found", "NOTE_NOT_FOUND", "there is no note with this slug", { target: args.slug });
  }
  out.domain(noteEvent("note", note), `${note.slug}\t${note.title}${note.body ? `\n\n${note.body}` : ""}`);
  return { ok: true };
}

function encodeCursor(after) {
  return `n1.${Buffer.from(JSON.stringify({ after })).toString("base64url")}`;
}

function decodeCursor(cursor) {
  const bad = new NotesError("validation", "INVALID_CURSOR", "this cursor was not made by `js-notes list`", { field: "cursor" });
  if (!cursor.startsWith("n1.")) throw bad;
  let data;
  try {
    data = JSON.parse(Buffer.from(cursor.slice(3), "base64url").toString("utf8"));
  } catch {
    throw bad;
  }
  if (!data || typeof data.after !== "string" || !SLUG_RE.test(data.after)) throw bad;
  return data.after;
}

function cmdList(args, out) {
  const limit = args.limit ?? LIST_DEFAULT_LIMIT;
  if (limit < 1 || limit > LIST_MAX_LIMIT) {
    throw new NotesError("validation", "INVALID_LIMIT", `--limit is 1 to ${LIST_MAX_LIMIT}`, { field: "limit" });
  }
  const after = args.cursor === undefined ? null : decodeCursor(args.cursor);
  const notes = loadStore().notes;
  const slugs = Object.keys(notes).sort().filter((s) => after === null || s > after);
  const page = slugs.slice(0, limit);
  let truncated = slugs.length > page.length;
  if (FAULT === "full-page") truncated = truncated && page.length < limit;
  for (const slug of page) out.domain(noteEvent("note", notes[slug]), `${slug}\t${notes[slug].title}`);
  const nextCursor = truncated ? encodeCursor(page[page.length - 1]) : null;
  if (truncated && !out.machine) diagnostic(`more notes: --cursor ${nextCursor}`);
  return { ok: true, paged: true, truncated, nextCursor };
}

function cmdRm(args, out) {
  const slugs = [...new Set(args.slugs)];
  for (const slug of slugs) checkSlug(slug, "slugs");
  if (!args.dry_run && !args.confirm) {
    throw usage("CONFIRMATION_REQUIRED", "`rm` removes notes only with --confirm (try --dry-run first)", { field: "confirm" });
  }
  checkWriteToken(args);
  const store = loadStore();
  const matched = slugs.filter((s) => store.notes[s]);
  const missing = slugs.filter((s) => !store.notes[s]);
  if (!args.dry_run) {
    const n = args.confirm_count;
    if (n === undefined && slugs.length > 1) {
      throw usage("CONFIRM_COUNT_REQUIRED", "removing more than one note needs --confirm-count N, the number of notes to remove", { field: "confirm_count" });
    }
    const wrong = FAULT === "confirm-count" ? n !== undefined && n < matched.length : n !== undefined && n !== matched.length;
    if (wrong) {
      throw new NotesError("precondition_failed", "CONFIRM_COUNT_MISMATCH", `--confirm-count does not match the ${matched.length} note(s) that would be removed; nothing was removed`, { field: "confirm_count" });
    }
  }
  for (const slug of missing) {
    out.error(new NotesError("not_found", "NOTE_NOT_FOUND", "there is no note with this slug", { target: slug, item_index: args.slugs.indexOf(slug) }), "item");
  }
  if (args.dry_run) {
    for (const slug of matched) out.plan({ action: "remove", slug, title: store.notes[slug].title }, `remove ${slug}`);
  } else if (matched.length > 0) {
    const removed = matched.map((slug) => store.notes[slug]);
    for (const slug of matched) delete store.notes[slug];
    saveStore(store);
    for (const note of removed) out.domain({ type: "removed", slug: note.slug, title: note.title }, `removed ${note.slug}`);
  }
  const properties = args.dry_run ? { dry_run: true } : undefined;
  if (missing.length > 0) {
    return { ok: false, reason: "failed", partial: matched.length > 0, exitCode: 1, properties };
  }
  return { ok: true, properties };
}

// Reads stdin to the end, as whole lines: a last line with no line feed is reported apart.
async function readStdinLines() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  const text = Buffer.concat(chunks).toString("utf8");
  const parts = text.split("\n");
  const tail = parts.pop();
  return { lines: parts, cutLine: tail !== "" };
}

const UPSTREAM_ERROR_KEYS = ["origin", "category", "code", "retryable", "retry_after_ms"];

async function cmdImport(args, out) {
  if (args.input_jsonl === undefined) {
    throw usage("MISSING_INPUT", "`import` reads its records with --input-jsonl -", { field: "input_jsonl" });
  }
  if (args.input_jsonl !== "-") {
    throw usage("UNSUPPORTED_INPUT", "--input-jsonl takes only `-` (stdin)", { field: "input_jsonl" });
  }
  if (args.fail_fast && args.continue_on_error) {
    throw usage("CONFLICTING_OPTIONS", "--fail-fast and --continue-on-error exclude each other");
  }
  if (process.stdin.isTTY) {
    throw usage("INPUT_IS_A_TERMINAL", "`import` reads JSONL records from a pipe or file, not from a terminal", { field: "input_jsonl" });
  }
  checkWriteToken(args);
  const tolerant = Boolean(args.continue_on_error);
  const { lines, cutLine } = await readStdinLines();

  let upstreamMeta = null;
  let upstreamSummary = null;
  const upstreamErrors = [];
  let unknownFramework = null;
  let sawFramework = false;
  const records = [];
  const itemErrors = [];
  let inputCount = 0;
  for (let i = 0; i < lines.length; i++) {
    const lineNumber = i + 1;
    const raw = lines[i].replace(/\r$/, "");
    if (raw.trim() === "") continue;
    let value;
    try {
      value = JSON.parse(raw);
    } catch {
      value = undefined;
    }
    if (!value || typeof value !== "object" || Array.isArray(value)) {
      const err = new NotesError("validation", "INPUT_JSONL_PARSE_ERROR", `input line ${lineNumber} is not a JSON object`, { line_number: lineNumber, field: "input_jsonl" });
      if (!tolerant) throw err;
      itemErrors.push(err);
      out.error(err, "item");
      continue;
    }
    const type = typeof value.type === "string" ? value.type : undefined;
    if (type !== undefined && type.startsWith("aoi:")) {
      sawFramework = true;
      if (type === "aoi:meta") {
        upstreamMeta ??= value;
      } else if (type === "aoi:summary") {
        upstreamSummary ??= value;
      } else if (type === "aoi:error" || type === "aoi:warning") {
        const { type: _t, aoi: _a, ...fields } = value;
        const origin = typeof value.origin === "string" ? value.origin
          : typeof upstreamMeta?.tool === "string" ? upstreamMeta.tool : "upstream";
        const forwarded = { type, ...fields, origin };
        if (type === "aoi:error") {
          upstreamErrors.push(forwarded);
        } else if (FAULT === "relay-prose") {
          writeAll(1, `warning from ${origin}: ${oneLine(value.message)}\n`);
        }
        out.forward(forwarded);
      } else if (!FRAMEWORK_TYPES.has(type)) {
        unknownFramework ??= { type, lineNumber };
      }
      continue;
    }
    inputCount += 1;
    if (type !== undefined && type !== "note" && type !== "added") continue;
    const record = recordFrom(value, lineNumber);
    if (record instanceof NotesError) {
      if (!tolerant) throw record;
      itemErrors.push(record);
      out.error(record, "item");
      continue;
    }
    records.push(record);
  }

  const upstream = upstreamMeta ? upstreamIdentity(upstreamMeta) : undefined;
  // A framework event this version does not know may carry a failure: never report success.
  if (unknownFramework) {
    out.error(new NotesError("unsupported", "UNKNOWN_FRAMEWORK_EVENT", `input line ${unknownFramework.lineNumber} is a framework event js-notes does not know; nothing was imported`, { line_number: unknownFramework.lineNumber }));
    return { ok: false, inputCount, upstream, exitCode: 1 };
  }
  // Records with no framework event at all are plain JSONL, not an upstream AOI stream.
  if (cutLine || (sawFramework && upstreamSummary === null)) {
    out.error(new NotesError("io", "UPSTREAM_TRUNCATED", "the input ended without the upstream's aoi:summary (or mid-line): it is incomplete, so nothing was imported", { field: "input_jsonl" }));
    return { ok: false, inputCount, upstream, exitCode: 74 };
  }
  if (!tolerant && upstreamErrors.length > 0) {
    const worst = upstreamErrors.find((e) => e.scope !== "item") ?? upstreamErrors[0];
    const causedBy = {};
    for (const k of UPSTREAM_ERROR_KEYS) if (worst[k] !== undefined) causedBy[k] = worst[k];
    return { ok: false, reason: "failed", inputCount, upstream, causedBy, exitCode: 1 };
  }
  if (!tolerant && upstreamSummary && upstreamSummary.ok !== true) {
    out.error(new NotesError("precondition_failed", "UPSTREAM_FAILED", "the upstream run reports failure, so nothing was imported (--continue-on-error imports anyway)"));
    return { ok: false, inputCount, upstream, exitCode: 1 };
  }

  const store = loadStore();
  let added = 0;
  const addedEvents = [];
  for (const record of records) {
    if (store.notes[record.slug]) {
      out.warning("NOTE_EXISTS", `input line ${record.lineNumber}: a note with this slug exists already; the record was skipped`, { properties: { slug: record.slug, line_number: record.lineNumber } });
      continue;
    }
    const note = { slug: record.slug, title: record.title };
    if (record.body !== undefined) note.body = record.body;
    note.created_at = record.created_at ?? now();
    store.notes[note.slug] = note;
    added += 1;
    addedEvents.push(note);
  }
  if (args.dry_run) {
    for (const note of addedEvents) out.plan({ action: "add", slug: note.slug, title: note.title }, `add ${note.slug}`);
  } else {
    if (added > 0) saveStore(store);
    for (const note of addedEvents) out.domain(noteEvent("added", note), `added ${note.slug}`);
  }
  const properties = args.dry_run ? { dry_run: true } : undefined;
  if (itemErrors.length > 0) {
    return { ok: false, reason: "failed", partial: added > 0, inputCount, upstream, exitCode: 65, properties };
  }
  return { ok: true, inputCount, upstream, properties };
}

function upstreamIdentity(meta) {
  const id = {};
  for (const k of ["tool", "tool_version", "schema_name", "schema_version"]) {
    if (typeof meta[k] === "string") id[k] = meta[k];
  }
  return Object.keys(id).length > 0 ? id : undefined;
}

// A note record of an input line, or the item error that rejects it.
function recordFrom(value, lineNumber) {
  const fail = (code, message, field) => new NotesError("validation", code, `input line ${lineNumber}: ${message}`, { line_number: lineNumber, field });
  if (typeof value.title !== "string") return fail("INVALID_RECORD", "a note record needs a string `title`", "title");
  let slug;
  try {
    slug = checkTitle(value.title);
  } catch (err) {
    return fail(err.code, err.message, "title");
  }
  if (value.slug !== undefined) {
    if (typeof value.slug !== "string" || !SLUG_RE.test(value.slug) || value.slug.length > SLUG_MAX) {
      return fail("INVALID_SLUG", "`slug` is lower case letters and digits joined by single hyphens", "slug");
    }
    slug = value.slug;
  }
  if (value.body !== undefined && (typeof value.body !== "string" || [...value.body].length > BODY_MAX)) {
    return fail("INVALID_BODY", "`body` is a string of at most 10000 characters", "body");
  }
  const record = { slug, title: value.title, body: value.body, lineNumber };
  if (typeof value.created_at === "string" && !Number.isNaN(Date.parse(value.created_at))) {
    record.created_at = value.created_at;
  }
  return record;
}

// ---------------------------------------------------------------------------------------------
// Discovery

function eventSchema() {
  const envelope = {
    type: "object",
    description: "The framework envelope: seq counts the lines of the stream from 0, run names the invocation.",
    required: ["seq", "run"],
    properties: {
      seq: { type: "integer", minimum: 0 },
      run: { type: "string", minLength: 1 },
      t: { type: "integer", minimum: 0 },
      trace_id: { type: "string" },
    },
  };
  const identityProps = {
    tool: { const: TOOL },
    tool_version: { type: "string" },
    aoi_version: { type: "string" },
    schema_name: { const: SCHEMA_NAME },
    schema_version: { type: "string" },
  };
  const noteProps = {
    slug: { type: "string", pattern: SLUG_RE.source, description: "The note's slug: its key, stable for the note's life." },
    title: { type: "string" },
    body: { type: "string" },
    created_at: { type: "string", format: "date-time" },
  };
  const defs = {
    envelope,
    "aoi:meta": {
      type: "object",
      required: ["type", "aoi", "tool", "tool_version", "aoi_version", "schema_name", "schema_version"],
      properties: {
        ...identityProps,
        command: { enum: Object.keys(COMMANDS) },
        args_redacted: { const: true },
        args: { type: "object", description: "The arguments of the run, options whose names look sensitive (§11) replaced by \"[REDACTED]\"." },
        properties: { type: "object" },
      },
    },
    "aoi:summary": {
      type: "object",
      required: ["type", "aoi", "ok", "event_count", "count", "warning_count", "error_count"],
      properties: {
        ...identityProps,
        ok: { type: "boolean" },
        reason: { enum: ["failed", "cancelled", "timeout", "denied", "skipped"] },
        event_count: { type: "integer", minimum: 1 },
        count: { type: "integer", minimum: 0 },
        input_count: { type: "integer", minimum: 0 },
        warning_count: { type: "integer", minimum: 0 },
        error_count: { type: "integer", minimum: 0 },
        partial: { type: "boolean" },
        truncated: { type: "boolean" },
        next_cursor: { type: ["string", "null"] },
        elapsed_ms: { type: "integer", minimum: 0 },
        caused_by: {
          type: "object",
          required: ["category", "code", "retryable"],
          properties: {
            origin: { type: "string" },
            category: { type: "string" },
            code: { type: "string" },
            retryable: { type: "boolean" },
            retry_after_ms: { type: "integer", minimum: 0 },
          },
        },
        upstream: {
          type: "object",
          properties: {
            tool: { type: "string" },
            tool_version: { type: "string" },
            schema_name: { type: "string" },
            schema_version: { type: "string" },
          },
        },
        properties: {
          type: "object",
          properties: { replayed: { type: "boolean" }, dry_run: { type: "boolean" } },
        },
      },
      if: { properties: { ok: { const: false } } },
      then: { required: ["reason"] },
    },
    "aoi:error": {
      type: "object",
      required: ["type", "aoi", "category", "code", "message", "retryable"],
      properties: {
        category: { type: "string", description: `One of ${CATEGORIES.join(", ")}; a forwarded error may carry another.` },
        code: { type: "string", pattern: "^[A-Z][A-Z0-9_]*$" },
        message: { type: "string" },
        retryable: { type: "boolean" },
        retry_after_ms: { type: "integer", minimum: 0 },
        domain: { type: "string" },
        origin: { type: "string" },
        scope: { enum: ["process", "item"] },
        target: { type: "string" },
        item_index: { type: "integer", minimum: 0 },
        line_number: { type: "integer", minimum: 1 },
        field: { type: "string" },
        hint: { type: "string" },
        details: { type: "object" },
      },
      if: { properties: { retryable: { const: false } } },
      then: { not: { required: ["retry_after_ms"] } },
    },
    "aoi:warning": {
      type: "object",
      required: ["type", "aoi"],
      properties: {
        code: { type: "string" },
        message: { type: "string" },
        origin: { type: "string" },
        properties: { type: "object" },
      },
    },
    "aoi:plan": {
      type: "object",
      required: ["type", "aoi", "properties"],
      properties: {
        properties: {
          type: "object",
          required: ["action", "slug"],
          properties: { action: { enum: ["add", "remove"] }, ...noteProps },
        },
      },
    },
    note: {
      type: "object", required: ["type", "aoi", "slug", "title", "created_at"],
      description: "A note, from `get` and `list`.", properties: noteProps,
    },
    added: {
      type: "object", required: ["type", "aoi", "slug", "title", "created_at"],
      description: "A note `add` or `import` added (or, on a replay, had added).", properties: noteProps,
    },
    removed: {
      type: "object", required: ["type", "aoi", "slug", "title"],
      description: "A note `rm` removed.", properties: { slug: noteProps.slug, title: noteProps.title },
    },
  };
  const branches = Object.keys(defs)
    .filter((name) => name !== "envelope")
    .map((name) => ({
      if: { properties: { type: { const: name } }, required: ["type"] },
      then: { $ref: `#/$defs/${name.replace(":", "%3A")}` },
    }));
  return {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    $id: SCHEMA_ID,
    title: `${SCHEMA_NAME} ${SCHEMA_VERSION}`,
    description: COMPATIBILITY,
    type: "object",
    required: ["type"],
    properties: { type: { type: "string" }, aoi: { $ref: "#/$defs/envelope" } },
    allOf: branches,
    $defs: defs,
  };
}

const COMPATIBILITY =
  "The events js-notes writes with --output jsonl. Compatibility: schema_name and schema_version " +
  "identify the stream. Adding an event type, or an optional field to an event, is a minor " +
  "change; removing or renaming an event type or a field, or changing a field's type or " +
  "meaning, is a major change of schema_version. Error codes never change once published. " +
  "Consumers should ignore event types and fields they do not know.";

function inputSchema(command) {
  const spec = COMMANDS[command];
  const properties = {};
  const required = [];
  for (const op of spec.operands) {
    properties[op.name] = op.variadic
      ? { type: "array", items: { type: "string" }, minItems: 1, description: op.description }
      : { type: "string", description: op.description };
    if (op.required) required.push(op.name);
  }
  const options = { ...spec.options };
  for (const name of ["schema-version", "no-color", "verbose"]) options[name] = GLOBAL_OPTIONS[name];
  for (const [flag, opt] of Object.entries(options)) {
    const prop = { type: opt.type, description: `--${flag}${opt.value ? ` ${opt.value}` : ""}: ${opt.help}` };
    if (opt.secret) prop.writeOnly = true;
    properties[propertyName(flag)] = prop;
  }
  if (command === "list") {
    properties.limit.minimum = 1;
    properties.limit.maximum = LIST_MAX_LIMIT;
    properties.limit.default = LIST_DEFAULT_LIMIT;
  }
  if (command === "import") {
    properties.input_jsonl.const = "-";
    required.push("input_jsonl");
  }
  if (command === "rm") properties.confirm_count.minimum = 0;
  const schema = {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    $id: `https://schemas.example.org/js-notes/input/${command}/1.0.0/schema.json`,
    title: `js-notes ${command}`,
    description: `${spec.summary} Operands are given in order after the command name; each option property is written as the flag named in its description.`,
    type: "object",
    properties,
    required,
    additionalProperties: false,
  };
  if (command === "import") {
    schema.$defs = {
      record: {
        description: "One line of the standard input: a note record. Lines of type aoi:* are read as the upstream's framework events; lines of another type than note or added are ignored.",
        type: "object",
        required: ["title"],
        properties: {
          type: { enum: ["note", "added"] },
          title: { type: "string", minLength: 1, maxLength: TITLE_MAX },
          slug: { type: "string", pattern: SLUG_RE.source, description: "The note's slug; made from the title when absent." },
          body: { type: "string", maxLength: BODY_MAX },
          created_at: { type: "string", format: "date-time" },
        },
      },
    };
  }
  return schema;
}

function capabilities() {
  const commands = Object.entries(COMMANDS).map(([name, spec]) => ({
    name, summary: spec.summary, input_modes: ["args"], ...spec.capabilities,
  }));
  for (const [name, spec] of Object.entries(DISCOVERY)) {
    commands.push({ name, summary: spec.summary, read_only: true, output: "json" });
  }
  return {
    tool: TOOL,
    tool_version: TOOL_VERSION,
    aoi_versions: [AOI_VERSION],
    outputs: ["jsonl", "text"],
    schemas: [{ name: SCHEMA_NAME, versions: [SCHEMA_VERSION], default: SCHEMA_VERSION }],
    auth: {
      required: false,
      detail: `none, unless ${WRITE_TOKEN_ENV} is set: then add, rm and import need the same token in --token`,
    },
    commands,
  };
}

// ---------------------------------------------------------------------------------------------
// Help

function helpText(command) {
  const lines = [];
  const flagLines = (options) => {
    for (const [flag, opt] of Object.entries(options)) {
      const left = `  --${flag}${opt.value ? ` ${opt.value}` : ""}`;
      lines.push(`${left.padEnd(30)} ${opt.help}`);
    }
  };
  if (command && COMMANDS[command]) {
    const spec = COMMANDS[command];
    const ops = spec.operands.map((o) => (o.variadic ? `${o.name.toUpperCase().replace(/S$/, "")}...` : o.name.toUpperCase()));
    lines.push(`usage: js-notes ${command}${ops.length ? ` ${ops.join(" ")}` : ""} [options]`, "", spec.summary, "");
    spec.operands.forEach((o, i) => lines.push(`  ${ops[i]}: ${o.description}`));
    if (spec.operands.length) lines.push("");
    lines.push("options:");
    flagLines(spec.options);
    flagLines(GLOBAL_OPTIONS);
    return `${lines.join("\n")}\n`;
  }
  if (command && DISCOVERY[command]) {
    lines.push(`usage: js-notes ${command} [options] --output json`, "", DISCOVERY[command].summary, "", "options:");
    flagLines(DISCOVERY[command].options);
    flagLines(GLOBAL_OPTIONS);
    return `${lines.join("\n")}\n`;
  }
  lines.push(
    "usage: js-notes COMMAND [ARGS] [--output jsonl]",
    "",
    "A small notes store. Each note has a title and a slug made from it; the slug is the",
    "note's key. Notes are kept in $XDG_DATA_HOME/js-notes/notes.json (else",
    "$HOME/.local/share/js-notes/notes.json).",
    "",
    "commands:",
  );
  for (const [name, spec] of Object.entries({ ...COMMANDS, ...DISCOVERY })) lines.push(`  ${name.padEnd(14)} ${spec.summary}`);
  lines.push("", "options:");
  flagLines(GLOBAL_OPTIONS);
  lines.push(
    "",
    "Machine mode (--output jsonl) writes one JSON event per line on stdout, AOI-CLI",
    `v${AOI_VERSION}: aoi:meta first, aoi:summary last, schema ${SCHEMA_NAME} ${SCHEMA_VERSION}`,
    "(`js-notes schema --output json`). Compatibility: adding an event type or an optional",
    "field is a minor change; removing or renaming one, or changing a field's type or",
    "meaning, changes the major version of schema_version. Error codes never change.",
    "",
    "Operands come in order after the command; `--` is not accepted.",
    "import reads JSONL records on stdin (--input-jsonl -). A malformed line aborts the",
    "whole import before anything is added (--fail-fast, the default), or with",
    "--continue-on-error is reported as an item error while the other records are imported.",
    "--idempotency-key does not change the retryable field of errors.",
    "",
    "exit status: 0 success, 1 other failure (not found, conflict, a failed upstream),",
    "64 usage, 65 invalid input, 69 unavailable, 70 internal error, 74 I/O error,",
    "77 missing or wrong --token, 78 configuration, 130 SIGINT, 141 stdout closed, 143 SIGTERM.",
  );
  return `${lines.join("\n")}\n`;
}

// ---------------------------------------------------------------------------------------------
// Running

function negotiateSchemaVersion(requested) {
  if (requested === undefined) return;
  if (!["1", "1.0", "1.0.0"].includes(requested)) {
    throw new NotesError("unsupported", "SCHEMA_VERSION_UNSUPPORTED", `js-notes writes schema version ${SCHEMA_VERSION} only`, { field: "schema_version" });
  }
}

function runDiscovery(command, args, format) {
  negotiateSchemaVersion(args.schema_version);
  let doc;
  if (command === "schema") doc = eventSchema();
  else if (command === "capabilities") doc = capabilities();
  else {
    if (args.command === undefined) throw usage("MISSING_OPTION", "`input-schema` needs --command COMMAND", { field: "command" });
    if (!(args.command in COMMANDS)) throw usage("UNKNOWN_COMMAND", "--command names no command that takes input", { field: "command" });
    doc = inputSchema(args.command);
  }
  writeAll(1, `${format === "jsonl" ? JSON.stringify(doc) : JSON.stringify(doc, null, 2)}\n`);
  return 0;
}

const HANDLERS = { add: cmdAdd, get: cmdGet, list: cmdList, rm: cmdRm, import: cmdImport };

let active = null;

function onSignal(signal) {
  const code = signal === "SIGINT" ? 130 : 143;
  try {
    if (active && active.machine && active.started && !active.finished) {
      active.finish({ ok: false, reason: "cancelled" });
    }
  } catch {
    // stdout is gone: nothing more to say there.
  }
  process.exit(code);
}

async function run(argv) {
  const format = outputFormat(argv);
  const machine = format === "jsonl";
  const out = new Output(machine);
  active = out;
  let command = null;
  try {
    if (!["jsonl", "json", "text", "human"].includes(format)) {
      throw usage("UNKNOWN_FORMAT", "--output is jsonl, json or text", { field: "output" });
    }
    const seen = {};
    let parsed;
    try {
      parsed = parse(argv, seen);
    } finally {
      command = seen.command ?? null;
    }
    command = parsed.command;
    if (parsed.options.help) {
      writeAll(1, helpText(command));
      return 0;
    }
    if (parsed.options.version) {
      writeAll(1, `${TOOL} ${TOOL_VERSION}\n`);
      return 0;
    }
    if (command !== null && command in DISCOVERY) {
      return runDiscovery(command, parsed.options, format);
    }
    if (command === null) {
      if (!machine) {
        writeAll(2, helpText(null));
        return 64;
      }
      throw usage("MISSING_COMMAND", "give a command (see js-notes --help)");
    }
    if (format === "json") {
      throw usage("UNKNOWN_FORMAT", `\`${command}\` writes a stream: use --output jsonl`, { field: "output" });
    }
    const args = bindOperands(command, parsed.operands, parsed.options);
    delete args.output;
    delete args.format;
    out.start(command, reportedArgs(args, out));
    if (args.verbose) diagnostic(`store: ${storePath()}`);
    negotiateSchemaVersion(args.schema_version);
    const outcome = await HANDLERS[command](args, out);
    out.finish(outcome);
    if (outcome.ok) return 0;
    return outcome.exitCode ?? 1;
  } catch (err) {
    if (err instanceof PipeClosed) return 141;
    const failure = err instanceof NotesError
      ? err
      : new NotesError("internal", "INTERNAL_ERROR", `js-notes failed unexpectedly: ${oneLine(err && err.message)}`);
    if (!(err instanceof NotesError) && process.env.JS_NOTES_DEBUG) diagnostic(oneLine(err && err.stack));
    try {
      if (machine) {
        out.start(command);
        out.error(failure);
        out.finish({ ok: false, reason: "failed" });
      } else {
        diagnostic(`error: ${failure.message}`);
      }
    } catch (again) {
      if (again instanceof PipeClosed) return 141;
    }
    return failure.exitCode;
  }
}

export async function main(fault = "clean") {
  FAULT = fault;
  process.on("SIGINT", () => onSignal("SIGINT"));
  process.on("SIGTERM", () => onSignal("SIGTERM"));
  let code;
  try {
    code = await run(process.argv.slice(2));
  } catch {
    code = 70;
  }
  process.exit(code);
}

if (process.argv[1] && fs.realpathSync(process.argv[1]) === fs.realpathSync(fileURLToPath(import.meta.url))) {
  await main();
}
