#!/usr/bin/env python3
"""A fake LLM provider for pkb's generation tests: a real HTTP server on 127.0.0.1 that
speaks the four wire protocols pkb uses, with behaviour scripted per request.

  fake_llm_server.py --script S.json --log L.jsonl --port-file P [--files-from DIR]

It binds a free port and writes it to P. S.json:
  {"key": "the API key to expect",
   "queue": [behaviour, ...],   # consumed one per request, in arrival order
   "default": behaviour,        # after the queue runs out (default: a normal reply)
   "turns": {"2": behaviour},   # by the request's turn (its count of user messages), before the queue
   "stall_s": 30}               # how long a stalled request holds the connection
A behaviour is one of
  {"reply": "text"}                  200 with this answer text (omit the text for a stock one)
  {"reply": "text", "code_file": F, "tag": "cpp"}
                                     the text, then file F (under --files-from, default the
                                     current folder) in a fenced block tagged `tag`
  {"status": 429, "retry_after": 1}  an error in the provider's shape, Retry-After optional
  {"stall": true}                    accept, read the request, never answer
  {"malformed": true}                200 with cut-off JSON
Every request appends one JSON line to L.jsonl: time, path, protocol, model, behaviour, auth,
turn (user messages in the request; a conversation of pkb agent has several), last_user (the
text of the last user message) and system.
Requests that break the protocol (missing fields or headers) get a 400 in the provider's
shape, so a test sees the mistake.
"""
import argparse
import json
import os
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

LOCK = threading.Lock()


def stock_reply(problem, n):
    return (
        f"Plan: one kernel per rank.\n\n```cuda\n// fake candidate {n} for {problem}\n"
        '#include "pkb/solution.h"\n'
        "PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }\n```\n"
    )


class Script:
    def __init__(self, path):
        with open(path) as f:
            s = json.load(f)
        self.key = s.get("key", "test-key")
        self.queue = list(s.get("queue", []))
        self.default = s.get("default", {"reply": None})
        self.turns = s.get("turns", {})
        self.stall_s = s.get("stall_s", 30)
        self.count = 0

    def next(self, turn):
        with LOCK:
            self.count += 1
            if str(turn) in self.turns:
                return self.count, self.turns[str(turn)]
            return self.count, (self.queue.pop(0) if self.queue else self.default)


def protocol_of(path):
    if path.endswith("/chat/completions"):
        return "openai-chat"
    if path.endswith("/responses"):
        return "openai-responses"
    if path.endswith("/messages"):
        return "anthropic"
    if re.search(r"/models/[^/]+:generateContent$", path):
        return "gemini"
    return None


def error_body(protocol, status, message, reason=""):
    if protocol == "anthropic":
        kind = {401: "authentication_error", 429: "rate_limit_error", 400: "invalid_request_error"}.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    if protocol == "gemini":
        names = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL"}
        err = {"code": status, "message": message, "status": names.get(status, "UNKNOWN")}
        if reason:
            err["details"] = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason}]
        return {"error": err}
    kind = {401: "invalid_request_error", 429: "rate_limit_exceeded"}.get(status, "server_error")
    return {"error": {"message": message, "type": kind, "code": None}}


def answer_body(protocol, model, text, prompt_len):
    p, c = prompt_len // 4, len(text) // 4
    thought = "Thinking: maybe ```cuda\nTHOUGHT_NOT_CODE\n``` would do."
    if protocol == "openai-chat":
        return {"id": "chatcmpl-1", "object": "chat.completion", "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}}
    if protocol == "openai-responses":
        return {"id": "resp_1", "object": "response", "status": "completed", "model": model,
                "output": [{"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": thought}]},
                           {"type": "message", "id": "msg_1", "role": "assistant",
                            "content": [{"type": "output_text", "text": text, "annotations": []}]}],
                "usage": {"input_tokens": p, "output_tokens": c, "total_tokens": p + c}}
    if protocol == "anthropic":
        return {"id": "msg_1", "type": "message", "role": "assistant", "model": model,
                "content": [{"type": "thinking", "thinking": thought, "signature": "sig"},
                            {"type": "text", "text": text}],
                "stop_reason": "end_turn", "usage": {"input_tokens": p, "output_tokens": c}}
    return {"candidates": [{"content": {"role": "model", "parts": [{"text": thought, "thought": True}, {"text": text}]},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": p, "candidatesTokenCount": c, "thoughtsTokenCount": 7,
                              "totalTokenCount": p + c + 7}}


def user_texts(protocol, body):
    """The texts of the request's user messages, in order (one for a single question)."""
    if protocol in ("openai-chat", "anthropic"):
        return [m.get("content", "") for m in body.get("messages", []) if m.get("role") == "user"]
    if protocol == "openai-responses":
        given = body.get("input")
        if isinstance(given, str):
            return [given]
        return [m.get("content", "") for m in given if m.get("role") == "user"]
    return ["".join(p.get("text", "") for p in c.get("parts", []))
            for c in body.get("contents", []) if c.get("role") == "user"]


def roles_alternate(roles, assistant):
    """A conversation starts and ends with the user, and the roles alternate."""
    want = ["user" if i % 2 == 0 else assistant for i in range(len(roles))]
    return roles == want and len(roles) % 2 == 1


def check_request(protocol, headers, query, body, key):
    """(problem with the request or None, key given, prompt text, model)"""
    if protocol in ("openai-chat", "openai-responses"):
        auth = headers.get("Authorization", "")
        given = auth[len("Bearer "):] if auth.startswith("Bearer ") else ""
    elif protocol == "anthropic":
        given = headers.get("x-api-key", "")
        if not headers.get("anthropic-version"):
            return "missing the anthropic-version header", given, "", ""
    else:
        given = headers.get("x-goog-api-key", "") or query.get("key", [""])[0]
    if not isinstance(body, dict):
        return "the body is not a JSON object", given, "", ""
    model = body.get("model", "")
    if protocol == "openai-chat":
        msgs = body.get("messages")
        if not model or not isinstance(msgs, list) or not any(m.get("role") == "user" for m in msgs):
            return "needs model and messages with a user message", given, "", model
        if not roles_alternate([m.get("role") for m in msgs if m.get("role") != "system"], "assistant"):
            return "messages must alternate user and assistant, first and last the user's", given, "", model
        prompt = "".join(m.get("content", "") for m in msgs)
    elif protocol == "openai-responses":
        given_input = body.get("input")
        if not model or not (isinstance(given_input, str) or isinstance(given_input, list)):
            return "needs model and input", given, "", model
        if isinstance(given_input, list):
            if not all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in given_input) or \
                    not roles_alternate([m.get("role") for m in given_input], "assistant"):
                return "input items need role and content, alternating user and assistant", given, "", model
            prompt = body.get("instructions", "") + "".join(m["content"] for m in given_input)
        else:
            prompt = body.get("instructions", "") + given_input
    elif protocol == "anthropic":
        msgs = body.get("messages")
        if not model or not isinstance(body.get("max_tokens"), int) or not isinstance(msgs, list):
            return "needs model, max_tokens and messages", given, "", model
        if not roles_alternate([m.get("role") for m in msgs], "assistant"):
            return "messages must alternate user and assistant, first and last the user's", given, "", model
        prompt = body.get("system", "") + "".join(m.get("content", "") for m in msgs)
    else:
        contents = body.get("contents")
        if not isinstance(contents, list) or not contents:
            return "needs contents", given, "", model
        if not roles_alternate([c.get("role") for c in contents], "model"):
            return "contents must alternate user and model, first and last the user's", given, "", model
        prompt = "".join(p.get("text", "") for c in contents for p in c.get("parts", []))
    return None, given, prompt, model


def system_of(protocol, body):
    if protocol == "openai-chat":
        return "".join(m.get("content", "") for m in body.get("messages", []) if m.get("role") == "system")
    if protocol == "openai-responses":
        return body.get("instructions", "")
    if protocol == "anthropic":
        return body.get("system", "")
    return "".join(p.get("text", "") for p in body.get("systemInstruction", {}).get("parts", []))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_json(self, status, obj, extra_headers=()):
        data = json.dumps(obj).encode()
        self.send_raw(status, data, extra_headers)

    def send_raw(self, status, data, extra_headers=()):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in extra_headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        server = self.server
        url = urlparse(self.path)
        length = int(self.headers.get("Content-Length", 0))
        raw = self.rfile.read(length)
        protocol = protocol_of(url.path)
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        users = []
        if protocol and isinstance(body, dict):
            try:
                users = user_texts(protocol, body)
            except (AttributeError, TypeError):
                users = []
        n, behaviour = server.script.next(len(users))
        entry = {"t": time.time(), "path": url.path, "protocol": protocol, "behaviour": behaviour,
                 "turn": len(users), "last_user": users[-1] if users else "",
                 "system": system_of(protocol, body) if protocol and isinstance(body, dict) else ""}
        if protocol is None:
            server.log(dict(entry, problem="unknown path"))
            return self.send_json(404, {"error": {"message": "no such endpoint " + url.path}})
        problem, given, prompt, model = check_request(protocol, self.headers, parse_qs(url.query), body, server.script.key)
        entry.update(model=model, auth="ok" if given == server.script.key else "bad")
        if problem:
            server.log(dict(entry, problem=problem))
            return self.send_json(400, error_body(protocol, 400, "fake server: " + problem))
        if given != server.script.key:
            server.log(entry)
            # Like real providers, the message quotes (part of) what it got: pkb must redact it.
            message = "invalid API key: " + given
            if protocol == "gemini":
                return self.send_json(400, error_body(protocol, 400, message, "API_KEY_INVALID"))
            return self.send_json(401, error_body(protocol, 401, message))
        server.log(entry)
        if behaviour.get("stall"):
            time.sleep(server.script.stall_s)
            self.close_connection = True
            return
        if behaviour.get("malformed"):
            return self.send_raw(200, b'{"choices": [{"message": {"content": "cut off')
        if "status" in behaviour:
            headers = [("Retry-After", str(behaviour["retry_after"]))] if "retry_after" in behaviour else []
            status = behaviour["status"]
            return self.send_json(status, error_body(protocol, status, f"scripted {status}"), headers)
        text = behaviour.get("reply")
        if "code_file" in behaviour:
            with open(os.path.join(server.files_from, behaviour["code_file"])) as f:
                code = f.read()
            text = (text or "") + "\n\n```" + behaviour.get("tag", "") + "\n" + code + "```\n"
        if text is None:
            found = re.search(r"pkb problem `(\w+)`", prompt)
            text = stock_reply(found.group(1) if found else "?", n)
        return self.send_json(200, answer_body(protocol, model, text, len(prompt)))


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, script, log_path, files_from):
        super().__init__(("127.0.0.1", 0), Handler)
        self.script = script
        self.log_path = log_path
        self.files_from = files_from

    def log(self, entry):
        with LOCK:
            with open(self.log_path, "a") as f:
                f.write(json.dumps(entry) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--script", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--files-from", default=".", help="the folder code_file paths are relative to")
    args = ap.parse_args()
    server = Server(Script(args.script), args.log, args.files_from)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
