// An MCP client of the official TypeScript SDK, for the end-to-end tests:
// node client.mjs URL TOKEN CALLS connects to URL with TOKEN (none when
// empty), lists the tools, calls each tool of the JSON array CALLS
// ([{"name", "arguments"}], or {"resource": uri} to read a resource), ends
// the session and prints what it saw as one JSON object: server,
// sessionId, tools, resources, results (a call that throws gives
// {thrown}), or error when it could not connect.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [url, token, calls] = process.argv.slice(2);
const headers = token ? { Authorization: `Bearer ${token}` } : {};
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
const client = new Client({ name: 'eventstore-e2e', version: '1.0.0' });
const out = {};
try {
  await client.connect(transport);
  out.server = client.getServerVersion();
  out.instructions = client.getInstructions();
  out.sessionId = transport.sessionId;
  out.tools = (await client.listTools()).tools;
  out.resources = (await client.listResources()).resources;
  out.results = [];
  for (const call of JSON.parse(calls || '[]')) {
    try {
      out.results.push(call.resource
        ? await client.readResource({ uri: call.resource })
        : await client.callTool({ name: call.name, arguments: call.arguments ?? {} }));
    } catch (e) {
      out.results.push({ thrown: String(e?.message ?? e) });
    }
  }
  await transport.terminateSession();
  await client.close();
} catch (e) {
  out.error = String(e?.message ?? e);
}
process.stdout.write(JSON.stringify(out));
