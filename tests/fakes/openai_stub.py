"""A small OpenAI-compatible HTTP server for tests and the demo: real HTTP, scripted answers.

In a test: `with OpenAIStub.running() as stub:` serves on 127.0.0.1 from a background thread;
point a client at `stub.base_url`. As a process: `python -m tests.fakes.openai_stub --port N`
prints `listening on http://127.0.0.1:N/v1` once ready, and takes orders over HTTP
(`POST /_stub/mode`, `POST /_stub/script`, `POST /_stub/reset`, `GET /_stub/requests`).

Endpoints: POST /v1/chat/completions (and Azure's /openai/deployments/<name>/chat/completions),
POST /v1/embeddings (deterministic vectors from
the HashingEmbedder), GET /v1/models.
Failure modes: ok, timeout (hangs until released or shut down), 500, 429 (with retry-after),
401, 404, malformed (a body that is not JSON), no_choices (valid JSON, empty choices), empty (empty content).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, get_args

import anyio
import uvicorn
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcp_memory.config import EmbeddingSettings
from mcp_memory.llm.hash_embedder import HashingEmbedder

Mode = Literal["ok", "timeout", "500", "429", "401", "404", "malformed", "no_choices", "empty"]
MODES: tuple[str, ...] = get_args(Mode)
ReplyFunction = Callable[[dict[str, Any]], str]

_EMBEDDING_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
_DEFAULT_DIMENSION = 384


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # the parsed JSON body, or None


def default_reply(body: dict[str, Any]) -> str:
    """Deterministic and summary-like: the last user message's first 200 characters."""
    user_texts = [m.get("content") for m in body.get("messages", []) if m.get("role") == "user"]
    text = user_texts[-1] if user_texts and isinstance(user_texts[-1], str) else ""
    return "SUMMARY: " + " ".join(text[:200].split())


class OpenAIStub:
    """The server's state; safe to change from the test thread while requests are served."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, hang_seconds: float = 60.0) -> None:
        self.host = host
        self.port = port
        self.hang_seconds = hang_seconds
        self.retry_after = "1"
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._replies: deque[str] = deque()
        self._reply_function: ReplyFunction | None = None
        self._mode: Mode = "ok"
        self._mode_times: int | None = None
        self._hung: set[tuple[asyncio.AbstractEventLoop, anyio.Event]] = set()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.app = Starlette(routes=self._routes())

    # ---- control, from the test thread ----
    def embedding_settings(self) -> EmbeddingSettings:
        """Embeddings from this stub (so a test can make the provider fail), failing fast: no retries."""
        return EmbeddingSettings(
            provider="openai",
            model="stub-embed",
            dimension=384,
            base_url=self.base_url,
            api_key=SecretStr("sk-test"),
            timeout_seconds=2.0,
            max_retries=0,
        )

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def chat_requests(self) -> list[dict[str, Any]]:
        """Bodies of the chat completions received, oldest first."""
        return [r.body for r in self.requests if r.path.endswith("/chat/completions")]

    def set_mode(self, mode: Mode, *, times: int | None = None) -> None:
        """Fail every following request in `mode`, or only the next `times` ones, then answer ok."""
        if mode not in MODES:
            raise ValueError(f"unknown stub mode {mode!r}; one of {', '.join(MODES)}")
        with self._lock:
            self._mode, self._mode_times = mode, times

    def script(self, *replies: str) -> None:
        """Queue chat replies, answered in order before the reply function or the default."""
        with self._lock:
            self._replies.extend(replies)

    def reply_with(self, function: ReplyFunction | None) -> None:
        with self._lock:
            self._reply_function = function

    def release_hung(self) -> None:
        with self._lock:
            hung, self._hung = self._hung, set()
        for loop, released in hung:
            # The event belongs to the server's loop, in another thread: set it from there.
            with contextlib.suppress(RuntimeError):  # that loop has already closed
                loop.call_soon_threadsafe(released.set)

    def reset(self) -> None:
        """Back to ok with no script and no record; hung requests are let go."""
        with self._lock:
            self._requests.clear()
            self._replies.clear()
            self._reply_function = None
            self._mode, self._mode_times = "ok", None
        self.release_hung()

    # ---- running ----
    @classmethod
    @contextlib.contextmanager
    def running(cls, **options: Any) -> Iterator[OpenAIStub]:
        stub = cls(**options)
        stub.start()
        try:
            yield stub
        finally:
            stub.stop()

    def start(self) -> None:
        sock = _bind(self.host, self.port)
        self.port = sock.getsockname()[1]
        started = threading.Event()
        server = self._server = _Server(self, on_started=started.set)

        def serve() -> None:
            try:
                server.run(sockets=[sock])
            finally:
                started.set()  # a server that died before listening must not leave start() waiting

        self._thread = threading.Thread(target=serve, name="openai-stub", daemon=True)
        self._thread.start()
        started.wait(timeout=30)
        if not server.started:
            self.stop()
            raise RuntimeError(f"OpenAI stub did not start on {self.base_url}")

    def stop(self) -> None:
        self.release_hung()
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=30)
        self._server = self._thread = None

    def _config(self) -> uvicorn.Config:
        return uvicorn.Config(
            self.app, log_level="warning", lifespan="off", access_log=False, timeout_graceful_shutdown=2
        )

    # ---- the HTTP side ----
    def _routes(self) -> list[Route]:
        return [
            Route("/v1/chat/completions", self._chat, methods=["POST"]),
            # Azure OpenAI's shape: the deployment in the path, ?api-version=... in the query.
            Route("/openai/deployments/{deployment}/chat/completions", self._chat, methods=["POST"]),
            Route("/v1/embeddings", self._embeddings, methods=["POST"]),
            Route("/v1/models", self._models, methods=["GET"]),
            Route("/_stub/mode", self._http_mode, methods=["POST"]),
            Route("/_stub/script", self._http_script, methods=["POST"]),
            Route("/_stub/reset", self._http_reset, methods=["POST"]),
            Route("/_stub/requests", self._http_requests, methods=["GET"]),
        ]

    async def _record(self, request: Request) -> Any:
        raw = await request.body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        with self._lock:
            self._requests.append(
                RecordedRequest(request.method, request.url.path, dict(request.headers), body)
            )
        return body

    def _take_mode(self) -> Mode:
        with self._lock:
            mode = self._mode
            if self._mode_times is not None:
                self._mode_times -= 1
                if self._mode_times <= 0:
                    self._mode, self._mode_times = "ok", None
            return mode

    async def _failure(self, mode: Mode) -> Response | None:
        match mode:
            case "timeout":
                await self._hang()
                return _error(504, "stub hung and was released", "timeout")
            case "500":
                return _error(500, "stub internal error", "server_error")
            case "429":
                response = _error(429, "stub rate limit", "rate_limit_exceeded")
                response.headers["retry-after"] = self.retry_after
                return response
            case "401":
                return _error(401, "Incorrect API key provided: sk-***", "invalid_api_key")
            case "404":
                return _error(404, "The model does not exist", "model_not_found")
            case "malformed":
                return Response('{"choices": [', media_type="application/json")
            case _:
                return None

    async def _hang(self) -> None:
        """Wait for hang_seconds, or until release_hung()/reset()/stop() from any thread."""
        released = anyio.Event()
        waiter = (asyncio.get_running_loop(), released)
        with self._lock:
            self._hung.add(waiter)
        try:
            with anyio.move_on_after(self.hang_seconds):
                await released.wait()
        finally:
            with self._lock:
                self._hung.discard(waiter)

    def _next_reply(self, body: dict[str, Any]) -> str:
        with self._lock:
            if self._replies:
                return self._replies.popleft()
            function = self._reply_function
        if function is not None:
            return function(body)
        reply = default_reply(body)
        if body.get("response_format", {}).get("type") == "json_object":
            return json.dumps({"reply": reply})
        return reply

    async def _chat(self, request: Request) -> Response:
        body = await self._record(request)
        mode = self._take_mode()
        failure = await self._failure(mode)
        if failure is not None:
            return failure
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return _error(400, "messages is required", "invalid_request_error")
        model = str(body.get("model", "stub-chat"))
        created = int(time.time())
        if mode == "no_choices":
            return JSONResponse({"id": "chatcmpl-stub", "object": "chat.completion", "created": created,
                                 "model": model, "choices": []})  # fmt: skip
        content = "" if mode == "empty" else self._next_reply(body)
        prompt_words = sum(len(str(m.get("content", "")).split()) for m in body["messages"])
        return JSONResponse(
            {
                "id": f"chatcmpl-stub-{len(self.requests)}",
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                        "logprobs": None,
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt_words,
                    "completion_tokens": len(content.split()),
                    "total_tokens": prompt_words + len(content.split()),
                },
            }
        )

    async def _embeddings(self, request: Request) -> Response:
        body = await self._record(request)
        failure = await self._failure(self._take_mode())
        if failure is not None:
            return failure
        if not isinstance(body, dict) or "input" not in body:
            return _error(400, "input is required", "invalid_request_error")
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        model = str(body.get("model", "stub-embed"))
        dimension = int(body.get("dimensions") or _EMBEDDING_DIMENSIONS.get(model, _DEFAULT_DIMENSION))
        as_base64 = body.get("encoding_format") == "base64"  # the SDK asks for base64 by default
        vectors = HashingEmbedder(dimension).embed_now(
            [text if isinstance(text, str) else json.dumps(text) for text in texts]
        )
        data = []
        for index, vector in enumerate(vectors):
            embedding: Any = vector.tolist()
            if as_base64:
                embedding = base64.b64encode(vector.astype("<f4").tobytes()).decode()
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        tokens = sum(len(str(t).split()) for t in texts)
        return JSONResponse(
            {
                "object": "list",
                "data": data,
                "model": model,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    async def _models(self, request: Request) -> Response:
        await self._record(request)
        models = [{"id": name, "object": "model", "created": 0, "owned_by": "stub"}
                  for name in ("stub-chat", "stub-embed")]  # fmt: skip
        return JSONResponse({"object": "list", "data": models})

    async def _http_mode(self, request: Request) -> Response:
        order = await request.json()
        try:
            self.set_mode(order["mode"], times=order.get("times"))
        except (KeyError, ValueError) as e:
            return _error(400, str(e), "invalid_request_error")
        return JSONResponse({"mode": order["mode"]})

    async def _http_script(self, request: Request) -> Response:
        order = await request.json()
        self.script(*[str(r) for r in order.get("replies", [])])
        return JSONResponse({"queued": len(order.get("replies", []))})

    async def _http_reset(self, request: Request) -> Response:
        self.reset()
        return JSONResponse({"mode": "ok"})

    async def _http_requests(self, request: Request) -> Response:
        return JSONResponse([{"method": r.method, "path": r.path, "body": r.body} for r in self.requests])


class _Server(uvicorn.Server):
    """uvicorn.Server that says when it is listening (start() waits on an event, not a sleep) and
    lets hung requests go before its graceful shutdown waits for them."""

    def __init__(self, stub: OpenAIStub, on_started: Callable[[], None]) -> None:
        super().__init__(stub._config())
        self._stub = stub
        self._on_started = on_started

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        self._on_started()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self._stub.release_hung()
        await super().shutdown(sockets=sockets)


def _bind(host: str, port: int) -> socket.socket:
    # Binding here (port 0 = any free port) means the port is known before uvicorn starts: no race.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.set_inheritable(True)
    return sock


def _error(status: int, message: str, kind: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "code": kind}}, status_code=status)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="OpenAI-compatible stub server for tests and demos.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 = any free port (printed on start)")
    parser.add_argument("--mode", choices=MODES, default="ok")
    args = parser.parse_args(argv)
    stub = OpenAIStub(host=args.host, port=args.port)
    stub.set_mode(args.mode)
    sock = _bind(stub.host, stub.port)
    stub.port = sock.getsockname()[1]
    server = _Server(stub, on_started=lambda: print(f"listening on {stub.base_url}", flush=True))
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
