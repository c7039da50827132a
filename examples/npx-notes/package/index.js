#!/usr/bin/env node
// A stdio MCP server with no dependencies: JSON-RPC 2.0, one message per
// line. Its one tool, read_file, reads any path it is given, with no check
// of its own: what it may read is the sandbox's answer alone. Its argument
// is the folder it serves (listed by list_notes).
'use strict';
const fs = require('fs');
const path = require('path');
const readline = require('readline');

const root = process.argv[2] || process.cwd();

const tools = [
  {
    name: 'read_file',
    description: 'Read a file by its path',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
  {
    name: 'list_notes',
    description: 'List the files of the served folder',
    inputSchema: { type: 'object', properties: {} },
  },
];

function callTool(name, args) {
  try {
    if (name === 'read_file') {
      return { content: [{ type: 'text', text: fs.readFileSync(String(args.path), 'utf8') }] };
    }
    if (name === 'list_notes') {
      return { content: [{ type: 'text', text: fs.readdirSync(root).sort().join('\n') }] };
    }
    return { isError: true, content: [{ type: 'text', text: 'unknown tool ' + name }] };
  } catch (err) {
    return { isError: true, content: [{ type: 'text', text: String(err.message) }] };
  }
}

function answer(msg) {
  switch (msg.method) {
    case 'initialize':
      return {
        protocolVersion: (msg.params && msg.params.protocolVersion) || '2025-06-18',
        capabilities: { tools: {} },
        serverInfo: { name: 'mcp-notes', version: '1.0.0' },
      };
    case 'ping':
      return {};
    case 'tools/list':
      return { tools };
    case 'tools/call':
      return callTool(msg.params.name, msg.params.arguments || {});
  }
  return undefined;
}

const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  if (!line.trim()) return;
  let msg;
  try {
    msg = JSON.parse(line);
  } catch (err) {
    return;
  }
  if (msg.id === undefined) return; // a notification
  const result = answer(msg);
  const reply = result === undefined
    ? { jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'method not found: ' + msg.method } }
    : { jsonrpc: '2.0', id: msg.id, result };
  process.stdout.write(JSON.stringify(reply) + '\n');
});
rl.on('close', () => process.exit(0));
process.stderr.write('mcp-notes serving ' + path.resolve(root) + '\n');
