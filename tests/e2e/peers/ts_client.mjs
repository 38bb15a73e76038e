// A TypeScript SDK client over Streamable HTTP that runs the tour and reports, for
// mcp-rosetta's e2e tests of the HTTP front.
//
// Must not be anything but the SDK as a host uses it: its own Client and its own
// StreamableHTTPClientTransport, the handlers a host registers, nothing on the wire by hand.
//
// Usage: node ts_client.mjs SDK URL
//   SDK  v1        @modelcontextprotocol/sdk 1.x (initialize handshake, a legacy session)
//        v2        @modelcontextprotocol/client 2.x pinned to 2026-07-28 (server/discover, MRTR)
//        v2-auto   the same in its "auto" negotiation: server/discover first, initialize if
//                  the server turns out legacy
//        v2-legacy the same in its default negotiation: the 2025 initialize handshake
// The tour: list and call tools (echo), progress (slow), logs at warning (chatty), an
// elicitation answered (ask_name), a tools list_changed heard after add_tool, then the new tool
// (named by $ROSETTA_E2E_NEW_TOOL, default "zap") listed and called.
//
// Prints ONE JSON object on stdout, each step's result or {"error": ...} under its own key.

const MODERN = "2026-07-28";
const LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel";
const EXPECT_MS = 3000;
const QUIET_MS = 500;
const FORM_ANSWERS = { name: "octocat", color: "blue" };

const [sdk, url] = process.argv.slice(2);
const added = process.env.ROSETTA_E2E_NEW_TOOL || "zap";
const out = { sdk, errors: {}, logs: [], progress: [], asked: [], changed: [] };
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

function answerElicitation(params) {
  out.asked.push({ phase, message: params.message });
  const properties = params.requestedSchema?.properties ?? {};
  const content = Object.fromEntries(
    Object.keys(properties).map((key) => [key, FORM_ANSWERS[key] ?? `<${key}>`]));
  return { action: "accept", content };
}

// The two SDK lines differ in how a client is built and handlers are named; the tour is one.
async function v1Client() {
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { StreamableHTTPClientTransport } = await import(
    "@modelcontextprotocol/sdk/client/streamableHttp.js");
  const types = await import("@modelcontextprotocol/sdk/types.js");
  const client = new Client({ name: "rosetta-ts-v1", version: "1.0.0" },
                            { capabilities: { elicitation: {} } });
  client.setRequestHandler(types.ElicitRequestSchema, (request) =>
    answerElicitation(request.params));
  client.setNotificationHandler(types.LoggingMessageNotificationSchema, (note) => {
    out.logs.push({ phase, ...note.params });
  });
  client.setNotificationHandler(types.ToolListChangedNotificationSchema, () => {
    out.changed.push({ phase });
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  out.protocol_version = client.transport?.protocolVersion ?? null;
  return {
    client,
    chatty: async () => {
      await client.setLoggingLevel("warning");
      return client.callTool({ name: "chatty", arguments: {} });
    },
    // 1.x: callTool(params, resultSchema, options)
    withProgress: (params, onprogress) => client.callTool(params, undefined, { onprogress }),
    hearChanges: async (action) => action(),
    close: () => client.close(),
  };
}

async function v2Client(mode = { pin: MODERN }) {
  const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
  const client = new Client({ name: "rosetta-ts-v2", version: "1.0.0" }, {
    capabilities: { elicitation: {} },
    versionNegotiation: { mode },
  });
  client.setRequestHandler("elicitation/create", (request) => answerElicitation(request.params));
  client.setNotificationHandler("notifications/message", (note) => {
    out.logs.push({ phase, ...note.params });
  });
  client.setNotificationHandler("notifications/tools/list_changed", () => {
    out.changed.push({ phase });
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  out.protocol_version = client.getNegotiatedProtocolVersion() ?? null;
  out.era = client.getProtocolEra() ?? null;
  const legacy = out.era === "legacy";
  return {
    client,
    // 2.x: callTool(params, options)
    withProgress: (params, onprogress) => client.callTool(params, { onprogress }),
    chatty: legacy ? async () => {
      await client.setLoggingLevel("warning");
      return client.callTool({ name: "chatty", arguments: {} });
    // 2026-07-28 has no logging/setLevel: the level rides on the request (logging.mdx).
    } : () => client.callTool({ name: "chatty", arguments: {},
                                _meta: { [LOG_LEVEL_KEY]: "warning" } }),
    // and no list_changed outside a subscriptions/listen stream.
    hearChanges: legacy ? async (action) => action() : async (action) => {
      const subscription = await client.listen({ toolsListChanged: true });
      out.listen = { honored: subscription.honoredFilter };
      try {
        return await action();
      } finally {
        await until(() => out.changed.some((c) => c.phase === phase), EXPECT_MS);
        await subscription.close();
      }
    },
    close: () => client.close(),
  };
}

async function tour(peer) {
  const { client } = peer;
  const names = async () => (await client.listTools()).tools.map((tool) => tool.name);
  await step("tools", names);
  await step("call:echo", () => client.callTool({ name: "echo", arguments: { text: "over http" } }));
  phase = "slow";
  await step("call:slow", () => peer.withProgress(
    { name: "slow", arguments: { steps: 3 } }, (p) => out.progress.push(p)));
  phase = "chatty";
  await step("call:chatty", peer.chatty);
  await until(() => out.logs.some((log) => log.phase === phase), EXPECT_MS);
  await sleep(QUIET_MS);
  phase = "ask_name";
  await step("call:ask_name", () => client.callTool({ name: "ask_name", arguments: {} }));
  phase = "add_tool";
  await step("call:add_tool", () => peer.hearChanges(
    () => client.callTool({ name: "add_tool", arguments: { name: added } })));
  await until(() => out.changed.some((c) => c.phase === phase), EXPECT_MS);
  phase = "after";
  await step("tools:after", names);
  await step("call:added", () => client.callTool({ name: added, arguments: {} }));
}

async function main() {
  const make = { v1: v1Client, v2: () => v2Client(), "v2-auto": () => v2Client("auto"),
                 "v2-legacy": () => v2Client("legacy") }[sdk];
  if (!make || !url) {
    process.stderr.write("usage: node ts_client.mjs v1|v2|v2-auto|v2-legacy URL\n");
    process.exit(2);
  }
  let code = 0;
  let peer;
  await step("connect", async () => {
    peer = await make();
    return true;
  });
  if (peer === undefined) {
    code = 1;
  } else {
    await tour(peer);
    await step("close", async () => {
    await peer.close();
    return true;
  });
  }
  out.exit_code = code;
  process.stdout.write(JSON.stringify(out) + "\n");
  process.exit(code);
}

main();
