#!/usr/bin/env python3
"""A model API stand-in on 127.0.0.1 for the host tests (tests/hosts).

Speaks just enough of four streaming APIs for a host to run one scripted turn:
Anthropic Messages (Claude Code), OpenAI Responses (Codex), Gemini
streamGenerateContent (Gemini CLI) and OpenAI chat completions (opencode).

    standin.py DIR      prints the port on its first line, then serves until killed

Every request is appended to DIR/requests.jsonl as {"path", "body"}. DIR/script.json
(read at each request) says what to answer: {"tool": NAME, "arguments": {...},
"namespace": NS (optional, Codex), "final": TEXT}. A request that offers the tool
and carries no tool result yet is answered with a call to it; any other request gets
a text answer (the final text once a tool result is there).
"""

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIR = sys.argv[1]
LOCK = threading.Lock()
RESULT_MARKERS = ('"tool_result"', '"function_call_output"', '"functionResponse"', '"role": "tool"')


def script():
    try:
        with open(os.path.join(DIR, "script.json")) as f:
            return json.load(f)
    except OSError:
        return {}


def decide(body):
    """("call", script) or ("text", text)."""
    s = script()
    text = json.dumps(body)
    has_result = any(m in text for m in RESULT_MARKERS)
    tools = json.dumps(body.get("tools") if isinstance(body, dict) else None)
    offered = s.get("tool") and (s.get("namespace") or s["tool"]) in tools
    if has_result:
        return ("text", s.get("final", "done"))
    if offered:
        return ("call", s)
    return ("text", "ok")


def sse(events):
    out = []
    for name, data in events:
        if name:
            out.append("event: %s\n" % name)
        out.append("data: %s\n\n" % (data if isinstance(data, str) else json.dumps(data)))
    return "".join(out).encode()


def anthropic(body, kind, s):
    usage = {"input_tokens": 1, "output_tokens": 1}
    if kind == "call":
        block = {"type": "tool_use", "id": "toolu_standin_1", "name": s["tool"], "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(s.get("arguments", {}))}
        stop = "tool_use"
    else:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": s}
        stop = "end_turn"
    msg = {"id": "msg_standin", "type": "message", "role": "assistant",
           "model": body.get("model", "standin"), "content": [], "stop_reason": None,
           "stop_sequence": None, "usage": usage}
    if not body.get("stream"):
        full = dict(block)
        if kind == "call":
            full["input"] = s.get("arguments", {})
        else:
            full["text"] = s
        msg.update(content=[full], stop_reason=stop)
        return "application/json", json.dumps(msg).encode()
    return "text/event-stream", sse([
        ("message_start", {"type": "message_start", "message": msg}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                           "usage": {"output_tokens": 1}}),
        ("message_stop", {"type": "message_stop"}),
    ])


def responses(body, kind, s):
    if kind == "call":
        item = {"type": "function_call", "id": "fc_standin_1", "call_id": "call_standin_1",
                "name": s["tool"], "arguments": json.dumps(s.get("arguments", {})), "status": "completed"}
        if s.get("namespace"):
            item["namespace"] = s["namespace"]
    else:
        item = {"type": "message", "id": "msg_standin_1", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": s, "annotations": []}]}
    resp = {"id": "resp_standin", "object": "response", "status": "completed", "output": [item],
            "usage": {"input_tokens": 1, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 1,
                      "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 2}}
    return "text/event-stream", sse([
        ("response.created", {"type": "response.created", "response": {"id": "resp_standin"}}),
        ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed", "response": resp}),
    ])


def gemini(body, kind, s, stream):
    if kind == "call":
        part = {"functionCall": {"name": s["tool"], "args": s.get("arguments", {})}}
    else:
        part = {"text": s}
    chunk = {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
             "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
             "modelVersion": "standin"}
    if stream:
        return "text/event-stream", sse([(None, chunk)])
    return "application/json", json.dumps(chunk).encode()


def chat(body, kind, s):
    base = {"id": "chatcmpl-standin", "object": "chat.completion.chunk", "created": 0,
            "model": body.get("model", "standin")}
    if kind == "call":
        delta = {"role": "assistant", "content": None, "tool_calls": [{
            "index": 0, "id": "call_standin_1", "type": "function",
            "function": {"name": s["tool"], "arguments": json.dumps(s.get("arguments", {}))}}]}
        finish = "tool_calls"
    else:
        delta = {"role": "assistant", "content": s}
        finish = "stop"
    if not body.get("stream"):
        msg = dict(delta)
        return "application/json", json.dumps(dict(base, object="chat.completion", choices=[
            {"index": 0, "message": msg, "finish_reason": finish}],
            usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2})).encode()
    return "text/event-stream", sse([
        (None, dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": None}])),
        (None, dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": finish}],
                    usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2})),
        (None, "[DONE]"),
    ])


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, ctype, data):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        with LOCK, open(os.path.join(DIR, "requests.jsonl"), "a") as f:
            f.write(json.dumps({"method": "GET", "path": self.path, "body": None}) + "\n")
        if "/models" in self.path:
            return self.reply(200, "application/json", json.dumps({"object": "list", "data": [], "models": []}).encode())
        self.reply(404, "application/json", b'{"error":{"message":"not here"}}')

    def do_HEAD(self):
        self.reply(200, "text/plain", b"")

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        if self.headers.get("Content-Encoding") == "gzip":
            import gzip
            try:
                raw = gzip.decompress(raw)
            except OSError:
                pass
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"unparsed": raw.decode("utf-8", "replace")}
        with LOCK, open(os.path.join(DIR, "requests.jsonl"), "a") as f:
            f.write(json.dumps({"method": "POST", "path": self.path, "body": body}) + "\n")
        path = self.path
        if path.startswith("/v1/messages/count_tokens"):
            return self.reply(200, "application/json", b'{"input_tokens": 1}')
        if ":countTokens" in path:
            return self.reply(200, "application/json", b'{"totalTokens": 1}')
        kind, arg = decide(body)
        if path.startswith("/v1/messages"):
            ctype, data = anthropic(body, kind, arg)
        elif path.endswith("/responses"):
            ctype, data = responses(body, kind, arg)
        elif ":streamGenerateContent" in path or ":generateContent" in path:
            ctype, data = gemini(body, kind, arg, ":streamGenerateContent" in path)
        elif path.endswith("/chat/completions"):
            ctype, data = chat(body, kind, arg)
        else:
            return self.reply(404, "application/json", b'{"error":{"message":"not here"}}')
        self.reply(200, ctype, data)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
