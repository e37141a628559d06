"""A stateless MCP 2026-07-28 server over HTTP that runs its one tool as a
task of the `io.modelcontextprotocol/tasks` extension, for Warden's test
that a daemon that dies mid-call leaves the task to the next one.

    task_server.py PORT SECONDS

(PORT 0: any free port; the one it got is printed on stdout.)

No pinned SDK serves the tasks extension yet, so this is written by hand
with the standard library, after the extension's text: `server/discover`
offers the extension; `tools/call` of `long(word)` answers at once with
`resultType: "task"`; `tasks/get` says `working` until SECONDS have passed
since the call, then `completed` with the result `WORD, done`. Tasks are
kept in this process, not in any session, so another client (a new
daemon) can ask about them. Every request's method is printed to stderr.
"""

import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TASKS = {}
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
EXTENSION = "io.modelcontextprotocol/tasks"


def result_of(method, params):
    if method == "server/discover":
        return {
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}, "extensions": {EXTENSION: {}}},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "task-server", "version": "1"}},
        }
    if method == "tools/list":
        schema = {"type": "object", "properties": {"word": {"type": "string"}}}
        return {"resultType": "complete", "tools": [{"name": "long", "inputSchema": schema}]}
    if method == "tools/call":
        word = (params.get("arguments") or {}).get("word", "")
        task_id = f"task-{len(TASKS) + 1}"
        TASKS[task_id] = (time.monotonic(), word)
        return {"resultType": "task", "taskId": task_id, "status": "working", "pollIntervalMs": 200}
    if method == "tasks/get":
        task_id = params.get("taskId")
        if task_id not in TASKS:
            return None
        started, word = TASKS[task_id]
        if time.monotonic() - started < SECONDS:
            return {"resultType": "complete", "taskId": task_id, "status": "working", "statusMessage": "thinking"}
        result = {"content": [{"type": "text", "text": f"{word}, done"}], "isError": False}
        return {"resultType": "complete", "taskId": task_id, "status": "completed", "result": result}
    if method == "tasks/cancel":
        TASKS.pop(params.get("taskId"), None)
        return {"resultType": "complete"}
    return None


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("content-length", "0"))
        message = json.loads(self.rfile.read(length) or b"{}")
        method = message.get("method", "")
        print(f"request {method}", file=sys.stderr, flush=True)
        if "id" not in message:
            self.send_response(202)
            self.end_headers()
            return
        result = result_of(method, message.get("params") or {})
        if result is None:
            answer = {"jsonrpc": "2.0", "id": message["id"],
                      "error": {"code": -32602, "message": f"unknown task or method: {method}"}}
        else:
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        body = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.send_response(405)
        self.end_headers()

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    print(f"listening on port {server.server_address[1]}", flush=True)
    server.serve_forever()
