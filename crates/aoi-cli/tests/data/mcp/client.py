"""An MCP client built on the official Python SDK (`mcp` from PyPI), driving `aoi mcp` the way a
host does: over stdio, through `stdio_client` and `ClientSession`.

    python client.py SCENARIO CONFIG_JSON

CONFIG_JSON holds `command` (the server's argv), `env` (added to the SDK's default
environment), optionally `cwd` (the server's working directory) and the scenario's own
fields. The scenario prints one JSON object on stdout for the Rust test
(crates/aoi-cli/tests/it/mcp.rs, mcp_python_example.rs, mcp_python_sdk.rs) to assert on; the
client itself asserts nothing.
"""

import json
import os
import sys
import time

import anyio
import jsonschema
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from referencing import Registry
from referencing.jsonschema import DRAFT202012


def wire(model):
    """A result as it was on the wire (camelCase, no absent fields)."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def schema_errors(tool, result):
    """Every way the structured content fails the tool's outputSchema (none when it fits)."""
    schema = tool.get("outputSchema")
    content = result.get("structuredContent")
    if schema is None or content is None:
        return ["no outputSchema" if schema is None else "no structuredContent"]
    validator = jsonschema.Draft202012Validator(schema)
    return [e.message for e in validator.iter_errors(content)]


class Client:
    def __init__(self, session):
        self.session = session
        self.tools = {}

    async def list(self):
        listed = await self.session.list_tools()
        self.tools = {t["name"]: t for t in (wire(t) for t in listed.tools)}
        return list(self.tools.values())

    async def call(self, name, arguments, validate=True, **kwargs):
        """The result as on the wire, with `_schema_errors`: how its structuredContent fails the
        tool's outputSchema. (The SDK itself also validates every result that is not isError,
        and raises when it does not fit.) `validate=False` leaves the check to the SDK alone, for
        results of tens of thousands of events that pure-Python jsonschema takes minutes over."""
        if not self.tools:
            await self.list()
        started = time.monotonic()
        result = wire(await self.session.call_tool(name, arguments, **kwargs))
        result["_elapsed"] = time.monotonic() - started
        result["_schema_errors"] = schema_errors(self.tools[name], result) if validate else None
        return result


def processes():
    """pid -> (state, process group, argv) of every process visible in /proc."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                stat = f.read()
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        found[int(entry)] = (fields[0], int(fields[2]), argv)
    return found


async def scenario_list(client, _config):
    return {"tools": await client.list()}


def schema_problems(schema):
    """How `schema` fails as a JSON Schema 2020-12 document, by the client's own `jsonschema`:
    against the meta-schema, when compiled, and for every `$ref` that does not resolve."""
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
        jsonschema.Draft202012Validator(schema).is_valid({})
        resource = DRAFT202012.create_resource(schema)
        resolver = Registry().with_resource("urn:aoi-test", resource).resolver("urn:aoi-test")
        for ref in sorted(_refs(schema)):
            resolver.lookup(ref)
    except Exception as e:  # a SchemaError, an unresolvable reference: a finding, not a crash
        return ["%s: %s" % (type(e).__name__, e)]
    return []


def _refs(value):
    """Every `$ref` in `value`."""
    found = set()
    if isinstance(value, dict):
        if isinstance(value.get("$ref"), str):
            found.add(value["$ref"])
        for v in value.values():
            found |= _refs(v)
    elif isinstance(value, list):
        for v in value:
            found |= _refs(v)
    return found


async def scenario_schemas(client, _config):
    """The tool list, and how each tool's inputSchema and outputSchema fail as schemas."""
    tools = await client.list()
    problems = {t["name"]: {"inputSchema": schema_problems(t.get("inputSchema")),
                            "outputSchema": schema_problems(t.get("outputSchema"))}
                for t in tools}
    return {"tools": tools, "schema_problems": problems}


async def scenario_call(client, config):
    return {"result": await client.call(config["tool"], config.get("arguments", {}))}


async def scenario_calls(client, config):
    """Several calls in turn on one session."""
    return {"results": [await client.call(c["tool"], c.get("arguments", {})) for c in config["calls"]]}


async def scenario_paginate(client, config):
    """Follows summary.next_cursor through the tool's `cursor` argument to the last page."""
    pages = []
    arguments = dict(config["arguments"])
    for _ in range(config.get("max_pages", 50)):
        result = await client.call(config["tool"], arguments)
        pages.append(result)
        summary = result.get("structuredContent", {}).get("summary") or {}
        if not summary.get("truncated"):
            break
        arguments = dict(config["arguments"], cursor=summary["next_cursor"])
    return {"pages": pages}


async def scenario_progress(client, config):
    """A call with a progress callback: the SDK sends a progress token with the request."""
    updates = []

    async def on_progress(progress, total, message):
        updates.append({"progress": progress, "total": total, "message": message})

    result = await client.call(config["tool"], config["arguments"], validate=False,
                               progress_callback=on_progress)
    return {"result": result, "progress": updates}


async def scenario_cancel(client, config):
    """Starts a call that runs until cancelled, cancels it once its process is seen, and
    reports what is left of that process and its group; then checks the server still serves."""
    marker, program = config["marker"], config["program"]
    outcome = {}

    def mine(argv):
        return bool(argv) and os.path.basename(argv[0]) == program and any(marker in a for a in argv)

    def ours():
        return [(pid, p) for pid, p in processes().items() if mine(p[2])]

    async def call():
        try:
            outcome["result"] = await client.call(config["tool"], config["arguments"])
        except anyio.get_cancelled_exc_class():
            outcome["cancelled"] = True
            raise

    await client.list()
    async with anyio.create_task_group() as group:
        group.start_soon(call)
        deadline = time.monotonic() + 20
        while not ours() and time.monotonic() < deadline:
            await anyio.sleep(0.05)
        seen = ours()
        outcome["seen"] = [{"pid": pid, "pgid": p[1], "argv": p[2]} for pid, p in seen]
        await anyio.sleep(0.5)
        group.cancel_scope.cancel()
    groups = {p[1] for _, p in seen}
    deadline = time.monotonic() + 10
    left = []
    while time.monotonic() < deadline:
        left = [{"pid": pid, "state": p[0], "argv": p[2]}
                for pid, p in processes().items() if p[1] in groups or mine(p[2])]
        if not left:
            break
        await anyio.sleep(0.1)
    outcome["left"] = left
    after = config.get("after")
    if after:
        outcome["after"] = await client.call(after["tool"], after.get("arguments", {}))
    return outcome


def tagged(tag):
    """pid -> argv of every live process (not a zombie) with `tag` in its argv."""
    return {pid: p[2] for pid, p in processes().items()
            if p[0] != "Z" and pid != os.getpid() and any(tag in a for a in p[2])}


def alive(pid):
    """True while `pid` exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:].split()[0] != "Z"


async def scenario_stop(client, config):
    """Starts a call, waits until `expect` processes carrying `tag` run, then stops the server
    (`how`: "stdin" closes its stdin, "TERM", "INT", "HUP" or "KILL" signals it) and reports how long
    until the server and every tagged process were gone, and what was left after `limit` s."""
    import signal
    tag, how, limit = config["tag"], config["how"], config.get("limit", 10)
    outcome = {}
    await client.list()
    server = [pid for pid in processes() if _parent(pid) == os.getpid()]
    outcome["servers"] = len(server)

    # hostile.py's `hang` reports progress once its helpers run: only then is every process
    # of the call there (a launcher's subshells carry its argv too, and would be counted).
    running = anyio.Event()

    async def on_progress(progress, total, message):
        running.set()

    async def call():
        try:
            outcome["result"] = await client.call(config["tool"], config.get("arguments", {}),
                                                  progress_callback=on_progress)
        except Exception as e:  # the server went away under the call: expected here
            outcome["call_error"] = type(e).__name__

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        with anyio.move_on_after(20):
            await running.wait()
        deadline = time.monotonic() + 20
        while len(tagged(tag)) < config["expect"] and time.monotonic() < deadline:
            await anyio.sleep(0.02)
        outcome["seen"] = len(tagged(tag))
        started = time.monotonic()
        if how == "stdin":
            # The SDK only closes stdin at its shutdown, then signals: the write end this
            # process holds of the server's stdin pipe is closed here, and nothing else.
            pipe = os.readlink("/proc/%d/fd/0" % server[0])
            for fd in os.listdir("/proc/self/fd"):
                try:
                    if os.readlink("/proc/self/fd/" + fd) == pipe:
                        os.close(int(fd))
                except OSError:
                    pass
        else:
            os.kill(server[0], getattr(signal, "SIG" + how))
        while time.monotonic() - started < limit:
            if not tagged(tag) and not any(alive(pid) for pid in server):
                break
            await anyio.sleep(0.02)
        outcome["elapsed"] = time.monotonic() - started
        outcome["left"] = [{"pid": pid, "argv": argv} for pid, argv in tagged(tag).items()]
        outcome["server_alive"] = any(alive(pid) for pid in server)
        group.cancel_scope.cancel()
    return outcome


def _parent(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2:].split()[1])


SCENARIOS = {
    "list": scenario_list,
    "schemas": scenario_schemas,
    "call": scenario_call,
    "calls": scenario_calls,
    "paginate": scenario_paginate,
    "progress": scenario_progress,
    "cancel": scenario_cancel,
    "stop": scenario_stop,
}


async def run(scenario, config, read, write):
    async with ClientSession(read, write) as session:
        init = await session.initialize()
        client = Client(session)
        client.write = write
        out = await SCENARIOS[scenario](client, config)
        out["server"] = wire(init.server_info) if hasattr(init, "server_info") else None
        return out


async def main():
    scenario, config = sys.argv[1], json.loads(sys.argv[2])
    if "url" in config:
        # A server already listening: Streamable HTTP (`aoi mcp --listen`).
        async with streamable_http_client(config["url"]) as (read, write):
            out = await run(scenario, config, read, write)
    else:
        command = config["command"]
        params = StdioServerParameters(command=command[0], args=command[1:], env=config.get("env", {}),
                                       cwd=config.get("cwd"))
        async with stdio_client(params) as (read, write):
            out = await run(scenario, config, read, write)
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    anyio.run(main)
