"""A stdio MCP server with no dependencies: JSON-RPC 2.0, one message per
line. Its one tool, read_file, reads any path it is given, with no check of
its own: what it may read is the sandbox's answer alone. Its argument is the
folder it serves (listed by list_notes)."""

import json
import os
import sys

TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file by its path",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
    {
        "name": "list_notes",
        "description": "List the files of the served folder",
        "inputSchema": {"type": "object", "properties": {}},
    },
]


def call_tool(root, name, args):
    try:
        if name == "read_file":
            with open(str(args.get("path", "")), encoding="utf-8") as f:
                return {"content": [{"type": "text", "text": f.read()}]}
        if name == "list_notes":
            return {"content": [{"type": "text", "text": "\n".join(sorted(os.listdir(root)))}]}
        return {"isError": True, "content": [{"type": "text", "text": "unknown tool " + name}]}
    except OSError as err:
        return {"isError": True, "content": [{"type": "text", "text": str(err)}]}


def answer(root, msg):
    method = msg.get("method")
    params = msg.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "mcp-server-notes", "version": "1.0.0"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        return call_tool(root, params.get("name"), params.get("arguments") or {})
    return None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.getcwd()
    print("mcp-server-notes serving " + os.path.abspath(root), file=sys.stderr, flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if "id" not in msg:
            continue  # a notification
        result = answer(root, msg)
        if result is None:
            reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "method not found: " + str(msg.get("method"))}}
        else:
            reply = {"jsonrpc": "2.0", "id": msg["id"], "result": result}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
