// The TypeScript SDK 1.x (`@modelcontextprotocol/sdk`) as a legacy stdio client: it starts
// the server command itself and runs one scenario, for mcp-rosetta's `--url` e2e tests.
//
// Must not be anything but the SDK as a host uses it: its own Client and its own
// StdioClientTransport, the handlers a host registers, nothing on the wire by hand. The
// transport is only tapped (a subclass that records what goes out and what comes back), so
// the test can check that every request got exactly one answer, and every progress
// notification that arrived (the SDK's own handler may miss the last ones: see the test).
//
// Usage: node ts_stdio_client.mjs SCENARIO -- <server command...>
// Scenarios:
//   tour     the test servers (peers/*_server.py): list and call tools, progress, logs at the
//            level set, an elicitation, a sampling and a roots request answered, a resource
//            subscribed and its update heard, a tools list_changed heard (then the new tool,
//            named by $ROSETTA_E2E_NEW_TOOL, default "zap", listed and called)
//   fixture  the TypeScript v2 SDK's conformance fixture: the same through its test_* tools
//            (its list_changed comes from test_trigger_tool_change; it has no way to update a
//            resource, so the subscription is only made)
//   restart  subscribe and set a level, then kill the server (by the pid its `pid` tool
//            gives) during a slow call; once told the tools changed, the same session lists
//            and calls tools, hears of a new tool, of the subscribed resource, and logs
//
// Prints ONE JSON object on stdout in the shape of peers/peer_common.py's Recorder (each
// step's result or {"error": ...} under its key; notifications and logs tagged by phase), so
// tests/e2e/checks.py reads it as a Python client's report.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import * as types from "@modelcontextprotocol/sdk/types.js";

const EXPECT_MS = 3000;
const QUIET_MS = 500;
const RESTART_MS = 30000;
const SCENARIO_MS = 90000;
const FORM_ANSWERS = { name: "octocat", color: "blue" };
const SAMPLING = { text: "Paris", model: "rosetta-test-model" };
const ROOTS = [{ uri: "file:///tmp/project", name: "project" }];
const URI = "memo://greeting";
const ADDED = process.env.ROSETTA_E2E_NEW_TOOL || "zap";  // the tour's new tool

const out = {
  errors: {}, notifications: [], logs: [], progress: [],
  asked: { elicitation: [], sampling: [], roots: 0 },
  wire: { sent: [], answered: [], progress: [] },
};
let phase = "start";

async function step(key, action) {
  try {
    const value = await action();
    out[key] = value ?? null;
    return value;
  } catch (err) {
    const info = { message: String(err?.message ?? err), code: err?.code };
    out[key] = { error: info };
    out.errors[key] = info;
    return undefined;
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(predicate, ms) {
  const deadline = Date.now() + ms;
  while (!predicate() && Date.now() < deadline) await sleep(20);
  return predicate();
}

const heard = (method) => () =>
  out.notifications.some((note) => note.phase === phase && note.method === method);

// The transport, tapped: requests out and answers in, by id and phase.
class TappedStdio extends StdioClientTransport {
  async start() {
    const deliver = this.onmessage;
    this.onmessage = (message) => {
      if ("id" in message && !("method" in message)) {
        out.wire.answered.push({ id: message.id, phase });
      } else if (message.method === "notifications/progress") {
        out.wire.progress.push({ phase, progress: message.params?.progress });
      }
      deliver?.(message);
    };
    return super.start();
  }

  async send(message) {
    if ("id" in message && "method" in message) {
      out.wire.sent.push({ id: message.id, phase, method: message.method });
    }
    return super.send(message);
  }

  // The client hands an HTTP transport the version its initialize agreed; here it is noted.
  setProtocolVersion(version) {
    out.protocol_version = version;
  }
}

function client() {
  const made = new Client({ name: "rosetta-ts-stdio", version: "1.0.0" }, {
    capabilities: { elicitation: {}, sampling: {}, roots: { listChanged: true } },
  });
  made.setRequestHandler(types.ElicitRequestSchema, ({ params }) => {
    out.asked.elicitation.push({ phase, message: params.message });
    const properties = params.requestedSchema?.properties ?? {};
    const content = Object.fromEntries(Object.entries(properties).map(
      ([key, schema]) => [key, FORM_ANSWERS[key] ?? schema.default ?? `<${key}>`]));
    return { action: "accept", content };
  });
  made.setRequestHandler(types.CreateMessageRequestSchema, ({ params }) => {
    out.asked.sampling.push({ phase, messages: params.messages });
    return { role: "assistant", content: { type: "text", text: SAMPLING.text },
             model: SAMPLING.model, stopReason: "endTurn" };
  });
  made.setRequestHandler(types.ListRootsRequestSchema, () => {
    out.asked.roots += 1;
    return { roots: ROOTS };
  });
  made.setNotificationHandler(types.LoggingMessageNotificationSchema, ({ params }) => {
    out.logs.push({ phase, level: params.level, data: params.data, logger: params.logger });
  });
  for (const schema of [types.ToolListChangedNotificationSchema,
                        types.ResourceUpdatedNotificationSchema]) {
    made.setNotificationHandler(schema, (note) => {
      out.notifications.push({ phase, method: note.method, params: note.params ?? {} });
    });
  }
  return made;
}

// --- the steps the scenarios share --------------------------------------------------------

async function listToolNames(session, key = "tools") {
  const listed = await step(key, () => session.listTools());
  out[`${key}:names`] = listed ? listed.tools.map((tool) => tool.name) : [];
  return out[`${key}:names`];
}

const call = (session, name, args = {}, options = undefined) =>
  session.callTool({ name, arguments: args }, undefined, options);

async function expect(key, method, action) {
  phase = key;
  await step(key, action);
  if (method === null) {
    await sleep(QUIET_MS);
  } else {
    out[`${key}:arrived`] = await until(heard(method), EXPECT_MS);
  }
}

async function expectLogs(key, action) {
  phase = key;
  await step(key, action);
  await until(() => out.logs.some((log) => log.phase === phase), EXPECT_MS);
  await sleep(QUIET_MS);
}

async function withProgress(session, key, name, args) {
  phase = key;
  await step(key, () => call(session, name, args, {
    onprogress: (p) => out.progress.push({ phase, progress: p.progress, total: p.total }),
  }));
}

// --- scenarios ----------------------------------------------------------------------------

async function tour(session) {
  await listToolNames(session);
  await step("call:echo", () => call(session, "echo", { text: "hi" }));
  await withProgress(session, "call:slow", "slow", { steps: 3 });
  await expect("set_level", null, () => session.setLoggingLevel("warning"));
  await expectLogs("chatty", () => call(session, "chatty"));
  for (const tool of ["ask_name", "ask_model", "list_roots"]) {
    phase = tool;
    await step(`call:${tool}`, () => call(session, tool));
  }
  await expect("subscribe", null, () => session.subscribeResource({ uri: URI }));
  await hearChanges(session, ADDED);
  phase = "after";
  await listToolNames(session, "tools:after");
  await step("call:added", () => call(session, ADDED));
}

async function hearChanges(session, added = "zap") {
  await expect("add_tool", "notifications/tools/list_changed",
               () => call(session, "add_tool", { name: added }));
  await expect("touch", "notifications/resources/updated",
               () => call(session, "touch", { uri: URI }));
}

async function fixture(session) {
  await listToolNames(session);
  await step("call:test_simple_text", () => call(session, "test_simple_text"));
  await withProgress(session, "call:test_tool_with_progress", "test_tool_with_progress", {});
  await expect("set_level", null, () => session.setLoggingLevel("debug"));
  await expectLogs("call:test_tool_with_logging", () => call(session, "test_tool_with_logging"));
  for (const tool of ["test_elicitation", "test_sampling",
                      "test_input_required_result_list_roots"]) {
    phase = tool;
    await step(`call:${tool}`, () => call(session, tool, inputsFor(tool)));
  }
  await expect("subscribe", null,
               () => session.subscribeResource({ uri: "test://watched-resource" }));
  await expect("trigger", "notifications/tools/list_changed",
               () => call(session, "test_trigger_tool_change"));
  phase = "after";
  await listToolNames(session, "tools:after");
}

function inputsFor(tool) {
  if (tool === "test_elicitation") return { message: "What is your name?" };
  if (tool === "test_sampling") return { prompt: "What is the capital of France?" };
  return {};
}

async function restart(session) {
  await expect("subscribe", null, () => session.subscribeResource({ uri: URI }));
  await expect("set_level", null, () => session.setLoggingLevel("warning"));
  await step("pid:before", () => call(session, "pid"));
  phase = "restart";
  const slow = step("kill:slow", () => call(session, "slow", { steps: 600 }, {
    onprogress: () => { out.progress.push({ phase }); },
    timeout: RESTART_MS,
  }));
  if (await until(() => out.progress.some((p) => p.phase === "restart"), RESTART_MS)) {
    process.kill(out["pid:before"].structuredContent.pid, "SIGKILL");
    out.killed = true;
  }
  await slow;
  out["restart:arrived"] = await until(heard("notifications/tools/list_changed"), RESTART_MS);
  phase = "after";
  await listToolNames(session, "tools:after");
  await step("call:echo", () => call(session, "echo", { text: "hi" }));
  await step("pid:after", () => call(session, "pid"));
  await hearChanges(session);
  await expectLogs("chatty", () => call(session, "chatty"));
}

const SCENARIOS = { tour, fixture, restart };

async function main() {
  const [scenario, dashes, command, ...args] = process.argv.slice(2);
  if (!(scenario in SCENARIOS) || dashes !== "--" || !command) {
    process.stderr.write("usage: node ts_stdio_client.mjs tour|fixture|restart -- COMMAND...\n");
    process.exit(2);
  }
  const session = client();
  const transport = new TappedStdio({ command, args, env: process.env, cwd: process.cwd(),
                                      stderr: "inherit" });
  const timer = setTimeout(() => finish(1, "the scenario took too long"), SCENARIO_MS);
  await step("connect", () => session.connect(transport).then(() => true));
  if (out.connect !== true) finish(1);
  out.initialize = { protocolVersion: out.protocol_version ?? null,
                     serverInfo: session.getServerVersion() ?? null,
                     capabilities: session.getServerCapabilities() ?? null };
  await SCENARIOS[scenario](session);
  clearTimeout(timer);
  await step("close", () => session.close().then(() => true));
  finish(0);
}

function finish(code, why = undefined) {
  if (why) out.errors.fatal = { message: why };
  out.exit_code = code;
  process.stdout.write(JSON.stringify(out) + "\n");
  process.exit(code);
}

main();
