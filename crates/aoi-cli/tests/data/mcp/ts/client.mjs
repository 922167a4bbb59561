// An MCP client built on the official TypeScript SDK, driving `aoi mcp` the way a host does:
// over stdio (`StdioClientTransport`) or Streamable HTTP (`StreamableHTTPClientTransport`),
// through the SDK's `Client`. Either major version: v1 (`@modelcontextprotocol/sdk`) or v2
// (`@modelcontextprotocol/client`, split packages, which speaks 2026-07-28 when asked).
//
//     node client.mjs SCENARIO CONFIG_JSON
//
// The packages are not beside this file: AOI_TS_MODULES names the `node_modules` directory the
// tests installed them into (crates/aoi-cli/tests/it/mcp_clients.rs), and AOI_TS_SDK says which
// SDK is there (`1`, the default, or `2`). With v2, CONFIG_JSON's `negotiation` is the client's
// `versionNegotiation.mode` (`"legacy"`, the SDK's default: initialize; `"auto"`; or
// `{"pin": "2026-07-28"}`: server/discover and per-request `_meta`). CONFIG_JSON holds either
// `url` (a server already listening) or `command` (the server's argv) with `env` (added to the
// SDK's default environment) and optionally `cwd`, plus the scenario's own fields. The scenario
// prints one JSON object on stdout for the Rust test (crates/aoi-cli/tests/it/mcp_protocol.rs)
// to assert on; the client itself asserts nothing.
//
// Every result is checked twice: by the SDK itself (`callTool` validates structuredContent
// against the tool's outputSchema with its own Ajv and throws when it does not fit; the error
// is kept as `_sdk_error`), and by a second Ajv of the dialect the schema names (`_schema_errors`).
// Whatever either Ajv logs (unknown formats, strict-mode notes) is collected in `warnings`.

import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { performance } from "node:perf_hooks";

const modules = process.env.AOI_TS_MODULES;
if (!modules) {
  process.stderr.write("client.mjs: set AOI_TS_MODULES to the node_modules with the SDK\n");
  process.exit(2);
}
const require = createRequire(join(modules, "resolve-from-here.js"));
const v2 = process.env.AOI_TS_SDK === "2";
const { Client, StreamableHTTPClientTransport } = v2
  ? require("@modelcontextprotocol/client")
  : {
      ...require("@modelcontextprotocol/sdk/client/index.js"),
      ...require("@modelcontextprotocol/sdk/client/streamableHttp.js"),
    };
const { StdioClientTransport, getDefaultEnvironment } = require(
  v2 ? "@modelcontextprotocol/client/stdio" : "@modelcontextprotocol/sdk/client/stdio.js",
);
const { default: Ajv } = require("ajv");
const { default: Ajv2020 } = require("ajv/dist/2020");
const { default: addFormats } = require("ajv-formats");

// Everything an Ajv (the SDK's, which logs through `console`, or ours) says while compiling.
const warnings = [];
for (const level of ["log", "warn", "error"]) {
  console[level] = (...args) => warnings.push(args.map(String).join(" "));
}
const logger = {
  log: (...a) => warnings.push(a.map(String).join(" ")),
  warn: (...a) => warnings.push(a.map(String).join(" ")),
  error: (...a) => warnings.push(a.map(String).join(" ")),
};

// The options the SDK's own validator uses (validation/ajv-provider.js), in the schema's dialect.
function ajvFor(schema) {
  const options = { strict: false, validateFormats: true, allErrors: true, logger };
  const dialect = typeof schema.$schema === "string" ? schema.$schema : "";
  const ajv = dialect.includes("2020-12") ? new Ajv2020(options) : new Ajv(options);
  addFormats(ajv);
  return ajv;
}

const validators = new Map();
function schemaErrors(tool, result) {
  const schema = tool?.outputSchema;
  if (!schema) return ["no outputSchema"];
  if (result.structuredContent === undefined) return ["no structuredContent"];
  let validate = validators.get(tool.name);
  if (!validate) {
    try {
      validate = ajvFor(schema).compile(schema);
    } catch (e) {
      return [`outputSchema does not compile: ${e.message}`];
    }
    validators.set(tool.name, validate);
  }
  if (validate(result.structuredContent)) return [];
  return validate.errors.map((e) => `${e.instancePath || "/"} ${e.message}`);
}

async function connect(config) {
  const options = config.negotiation ? { versionNegotiation: { mode: config.negotiation } } : {};
  const client = new Client({ name: "aoi-tests-ts", version: "1.0.0" }, options);
  let transport;
  let stderr = "";
  if (config.url) {
    transport = new StreamableHTTPClientTransport(new URL(config.url));
  } else {
    const [command, ...args] = config.command;
    transport = new StdioClientTransport({
      command,
      args,
      env: { ...getDefaultEnvironment(), ...(config.env ?? {}) },
      cwd: config.cwd,
      stderr: "pipe",
    });
    transport.stderr?.on("data", (chunk) => {
      stderr += chunk;
    });
  }
  await client.connect(transport);
  return { client, transport, stderr: () => stderr };
}

// The revision the client and the server agreed on (v1 and v2 both expose it after connect).
function negotiated(client, transport) {
  return client.getNegotiatedProtocolVersion?.() ?? transport.protocolVersion ?? null;
}

async function list(client) {
  const started = performance.now();
  const listed = await client.listTools();
  const listMs = performance.now() - started;
  return { tools: listed.tools, listMs, listBytes: JSON.stringify(listed).length };
}

async function call(client, tools, name, args) {
  const tool = tools.find((t) => t.name === name);
  let result;
  let sdkError = null;
  try {
    result = await client.callTool({ name, arguments: args });
  } catch (e) {
    // The SDK refused the result (it does not fit the outputSchema) or the call failed:
    // ask again without the SDK's check, so the test sees what was on the wire.
    sdkError = { code: e.code ?? null, message: e.message };
    try {
      const request = { method: "tools/call", params: { name, arguments: args } };
      result = v2
        ? await client.request(request)
        : await client.request(request, require("@modelcontextprotocol/sdk/types.js").CallToolResultSchema);
    } catch (again) {
      return { _sdk_error: sdkError, _request_error: { code: again.code ?? null, message: again.message } };
    }
  }
  return { ...result, _sdk_error: sdkError, _schema_errors: schemaErrors(tool, result) };
}


// The live processes (zombies aside) other than this one with `tag` in an argument:
// pid -> argv.
function tagged(tag) {
  const found = new Map();
  for (const name of readdirSync("/proc")) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) continue;
      const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
      if (argv.some((a) => a.includes(tag))) found.set(pid, argv);
    } catch {
      // Gone between the listing and the read.
    }
  }
  return found;
}

// True while `pid` exists and is not a zombie.
function alive(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return false;
  }
}

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Polls `done` every 20 ms for at most `limitMs`; the last value it returned.
async function until(done, limitMs) {
  const deadline = performance.now() + limitMs;
  let value = done();
  while (!value && performance.now() < deadline) {
    await pause(20);
    value = done();
  }
  return value;
}

const scenarios = {
  // Lists the tools: {tools, listMs, listBytes, warnings}.
  async list(config) {
    const { client, transport } = await connect(config);
    const listed = await list(client);
    const protocolVersion = negotiated(client, transport);
    await client.close();
    return { ...listed, protocolVersion, warnings };
  },
  // Lists the tools, then runs `calls` ([{tool, arguments}]) in order; each result is checked.
  async calls(config) {
    const { client, transport } = await connect(config);
    const listed = await list(client);
    const results = [];
    for (const c of config.calls) {
      results.push(await call(client, listed.tools, c.tool, c.arguments ?? {}));
    }
    const protocolVersion = negotiated(client, transport);
    await client.close();
    return { ...listed, results, protocolVersion, warnings };
  },
  // Starts `tool` over Streamable HTTP, waits for its first progress notification (hostile.py's
  // `hang` sends one once its helpers run) and for `expect` processes carrying `tag`, then
  // stops the call `how`: "delete" (the SDK terminates the session: HTTP DELETE), "cancel"
  // (the call's AbortSignal: notifications/cancelled) or "signal" (SIGTERM to `server_pid`).
  // Reports how many tagged processes ran (`seen`, and `running`: which), how long until they
  // and, for "signal", the server were gone (`elapsed_ms`, bounded by `limit_ms`), what was
  // left, and, when `after` ({tool, arguments}) is given, that call's checked result: on the
  // same session after "cancel", on a fresh one after "delete".
  async stop(config) {
    const { tag, how } = config;
    let { client, transport } = await connect(config);
    const listed = await list(client);
    const abort = new AbortController();
    const outcome = { how };
    // The CLI's first progress says its helpers run (hostile.py's `hang`).
    let progressed;
    const firstProgress = new Promise((resolve) => {
      progressed = resolve;
    });
    const pending = client
      .callTool({ name: config.tool, arguments: config.arguments ?? {} }, undefined, {
        signal: abort.signal,
        timeout: 600_000,
        onprogress: () => progressed(),
      })
      .then(
        (result) => {
          outcome.call = { isError: result.isError ?? false, structuredContent: result.structuredContent };
        },
        (e) => {
          outcome.call_error = { code: e.code ?? null, message: e.message };
        },
      );
    await Promise.race([firstProgress, pending]);
    await until(() => tagged(tag).size >= config.expect, 5_000);
    const running = tagged(tag);
    outcome.seen = running.size;
    outcome.running = [...running].map(([pid, argv]) => ({ pid, argv }));
    const started = performance.now();
    if (how === "delete") {
      await transport.terminateSession();
    } else if (how === "cancel") {
      abort.abort("the test cancels the call");
    } else if (how === "signal") {
      process.kill(config.server_pid, "SIGTERM");
    } else {
      throw new Error(`no way to stop a call called ${how}`);
    }
    const serverGone = () => how !== "signal" || !alive(config.server_pid);
    await until(() => tagged(tag).size === 0 && serverGone(), config.limit_ms ?? 10_000);
    outcome.elapsed_ms = performance.now() - started;
    outcome.left = [...tagged(tag)].map(([pid, argv]) => ({ pid, argv }));
    outcome.server_alive = how === "signal" ? alive(config.server_pid) : null;
    if (how === "cancel") {
      // The SDK rejects the call at once on abort.
      await pending;
    }
    if (config.after) {
      if (how === "delete") {
        await client.close().catch(() => {});
        ({ client, transport } = await connect(config));
        listed.tools = (await list(client)).tools;
      }
      outcome.after = await call(client, listed.tools, config.after.tool, config.after.arguments ?? {});
    }
    await client.close().catch(() => {});
    return { ...outcome, warnings };
  },
};

const [scenario, configText] = process.argv.slice(2);
if (!scenarios[scenario]) {
  process.stderr.write(`client.mjs: no scenario ${scenario}: ${Object.keys(scenarios).join(", ")}\n`);
  process.exit(2);
}
try {
  const out = await scenarios[scenario](JSON.parse(configText ?? "{}"));
  // Exit only once the pipe took it all: a pipe write is asynchronous in Node.
  process.stdout.write(JSON.stringify(out) + "\n", () => process.exit(0));
} catch (e) {
  process.stderr.write(`client.mjs ${scenario}: ${e.stack ?? e}\n`);
  process.exit(1);
}
