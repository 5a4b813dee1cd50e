"""Provides `agency serve`: a REST API over a run store, with an OpenAPI schema.

    GET  /runs                                   runs, newest first (?limit=&offset=)
    GET  /runs/{id}                              one run, its branches and length
    GET  /runs/{id}/steps/{n}                    the state at step n (?branch=)
    GET  /runs/{id}/checkpoints                  a Python agent's checkpoints (?limit=&offset=)
    POST /runs/{id}/rollback/{checkpointId}      roll back ({"discard": true} deletes later ones)
    GET  /agents/{name}/checkpoints?runId=X      the seed's paths, exactly
    POST /agents/{name}/rollback/{checkpointId}
    GET  /openapi.json                           this API's schema

Errors are JSON (`{"error": {"status", "message"}}`) with their status codes. The server binds to
127.0.0.1 unless told otherwise; bound anywhere else it needs a token (`--token` or
`AGENCY_TOKEN`), which then every request must carry as `Authorization: Bearer TOKEN`.

Built on Starlette and uvicorn (the optional extra `serve`: `pip install 'agency-debugger[serve]'`),
imported when the server starts, so the CLI starts without them.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import sys
from datetime import datetime
from typing import Any

import click

from runtime.errors import UsageError
from runtime.language.files import loads_json

DEFAULT_PORT = 8321
MAX_LIMIT = 1000
MAX_OFFSET = 10**9


class HTTPError(Exception):
    """An error answer: its status code and one-line message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


# -- the API, independent of the web framework -----------------------------------------------


class API:
    """The answers of every endpoint, as plain data; raises `HTTPError`."""

    def __init__(self, store: Any) -> None:
        from runtime.agents.manager import CheckpointManager
        from runtime.agents.storage import RunStoreStorage

        self.store = store
        self.manager = CheckpointManager(RunStoreStorage(store))

    def run(self, ref: str) -> Any:
        from runtime.record.store import StoreError

        try:
            run = self.store.get_run(ref) or self.manager.find_run(ref)  # an id, or an agent's name
        except StoreError as e:
            raise HTTPError(404, str(e)) from None
        if run is None:
            raise HTTPError(404, f"no run {ref!r}")
        return run

    def runs(self, limit: int, offset: int) -> dict[str, Any]:
        from runtime.runs.processes import reap_dead_runs

        records = self.store.list_runs(offset + limit + 1)
        reap_dead_runs(self.store, records[offset : offset + limit])
        page = [self.store.get_run(r.id) or r for r in records[offset : offset + limit]]
        more = len(records) > offset + limit
        return {
            "runs": [run_json(r) for r in page],
            "limit": limit,
            "offset": offset,
            "next": offset + limit if more else None,
        }

    def run_detail(self, ref: str) -> dict[str, Any]:
        run = self.run(ref)
        out = run_json(run)
        out["branches"] = [
            {
                "branch": b.branch,
                "parent": b.parent_branch,
                "forkStep": b.fork_step,
                "length": b.length,
                "edits": b.edits,
            }
            for b in self.store.branches(run.id)
        ]
        return out

    def step(self, ref: str, step: int, branch: int | None) -> dict[str, Any]:
        from runtime.agents.storage import status_at
        from runtime.api import State, Timeline

        run = self.run(ref)
        if branch is None:
            branch = head_of(run)
        if branch not in {b.branch for b in self.store.branches(run.id)}:
            raise HTTPError(404, f"run {run.id} has no branch {branch}")
        tl = Timeline(self.store, run.id, branch)
        if not 0 <= step < len(tl):
            steps = f"{len(tl)} step" + ("" if len(tl) == 1 else "s")
            raise HTTPError(404, f"step {step} is outside run {run.id} (it has {steps})")
        state = State.of(tl.view_at(step))
        return {
            "runId": run.id,
            "step": state.step,
            "branch": state.branch,
            "location": state.location,
            "locals": state.locals,
            "globals": state.globals,
            "frames": state.frames,
            "threads": state.threads,
            "activeThread": state.active_thread,
            "output": state.output,
            "usage": state.usage,
            "status": status_at(run, branch, step, len(tl), state.status),
            "result": state.result,
            "error": state.error,
        }

    def checkpoints(self, ref: str, limit: int, offset: int, agent: str | None = None) -> Any:
        from runtime.agents.storage import AGENT_KIND

        run = self.run(ref)
        if (run.meta or {}).get("kind") != AGENT_KIND:
            raise HTTPError(404, f"run {run.id} is not a Python agent's run: it has no checkpoints")
        if agent is not None and (run.meta or {}).get("agent") != agent:
            raise HTTPError(404, f"run {run.id} is not a run of agent {agent!r}")
        cps = self.manager.list(run.id)
        page = cps[offset : offset + limit]
        return {
            "runId": run.id,
            "checkpoints": [c.to_dict() for c in page],
            "limit": limit,
            "offset": offset,
            "next": offset + limit if len(cps) > offset + limit else None,
        }

    def rollback(
        self, checkpoint_id: str, discard: bool, run_ref: str | None, agent: str | None
    ) -> dict[str, Any]:
        from runtime.agents.manager import CheckpointConflict, CheckpointNotFound

        cp = self.manager.get(checkpoint_id)
        if cp is None:
            raise HTTPError(404, f"no checkpoint {checkpoint_id!r}")
        if run_ref is not None and self.run(run_ref).id != cp.run_id:
            raise HTTPError(404, f"checkpoint {checkpoint_id} is not a checkpoint of {run_ref}")
        if agent is not None and cp.agent != agent:
            raise HTTPError(404, f"checkpoint {checkpoint_id} is not a checkpoint of {agent!r}")
        try:
            restored = self.manager.rollback(checkpoint_id, discard=discard)
        except CheckpointNotFound as e:
            raise HTTPError(404, str(e)) from None
        except CheckpointConflict as e:
            raise HTTPError(409, str(e)) from None
        return {"checkpoint": restored.to_dict(), "discarded": discard}


def head_of(run: Any) -> int:
    return int((run.meta or {}).get("head") or 0)


def _time(t: datetime | None) -> str | None:
    return t.isoformat() if t is not None else None


def run_json(r: Any) -> dict[str, Any]:
    meta = r.meta or {}
    return {
        "id": r.id,
        "kind": meta.get("kind") or "agency",
        "agent": meta.get("agent"),
        "name": meta.get("name"),
        "source": r.source_path,
        "node": r.node,
        "status": r.status,
        "steps": r.step_count,
        "head": head_of(r),
        "createdAt": _time(r.created_at),
        "updatedAt": _time(r.updated_at),
        "finishedAt": _time(r.finished_at),
        "result": r.result,
        "error": r.error,
    }


# -- the schema ---------------------------------------------------------------------------------


def _param(name: str, where: str, schema: dict[str, Any], required: bool = True) -> Any:
    return {"name": name, "in": where, "required": required, "schema": schema}


def _ok(ref: str) -> dict[str, Any]:
    return {
        "description": "OK",
        "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}},
    }


def _errors(*codes: int) -> dict[str, Any]:
    words = {400: "Bad request", 401: "Missing or wrong token", 404: "Not found", 409: "Conflict"}
    err = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    return {str(c): {"description": words[c], **err} for c in codes}


def openapi_schema(token: bool = False) -> dict[str, Any]:
    """The OpenAPI 3.0 description of every endpoint, answers and errors included (and the
    bearer token, when the server needs one)."""
    limit = _param("limit", "query", {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT}, False)
    offset = _param(
        "offset", "query", {"type": "integer", "minimum": 0, "maximum": MAX_OFFSET}, False
    )
    text = {"type": "string", "minLength": 1}
    run_id = _param("runId", "path", text)
    cp_id = _param("checkpointId", "path", text)
    name = _param("name", "path", text)
    body = {
        "required": False,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Rollback"}}},
    }
    obj = {"type": "object"}
    any_ = {"nullable": True}
    out: dict[str, Any] = {
        "openapi": "3.0.3",
        "info": {"title": "agency serve", "version": "1"},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["error"],
                    "properties": {
                        "error": {
                            "type": "object",
                            "required": ["status", "message"],
                            "properties": {
                                "status": {"type": "integer"},
                                "message": {"type": "string"},
                            },
                        }
                    },
                },
                "Run": {
                    "type": "object",
                    "required": ["id", "kind", "status", "steps", "head", "createdAt"],
                    "properties": {
                        "id": {"type": "string"},
                        "kind": {"type": "string"},
                        "agent": {"type": "string", "nullable": True},
                        "name": {"type": "string", "nullable": True},
                        "source": {"type": "string"},
                        "node": {"type": "string"},
                        "status": {"type": "string"},
                        "steps": {"type": "integer"},
                        "head": {"type": "integer"},
                        "createdAt": {"type": "string"},
                        "updatedAt": {"type": "string"},
                        "finishedAt": {"type": "string", "nullable": True},
                        "result": any_,
                        "error": {"type": "string", "nullable": True},
                        "branches": {"type": "array", "items": obj},
                    },
                },
                "RunPage": {
                    "type": "object",
                    "required": ["runs", "limit", "offset", "next"],
                    "properties": {
                        "runs": {"type": "array", "items": {"$ref": "#/components/schemas/Run"}},
                        "limit": {"type": "integer"},
                        "offset": {"type": "integer"},
                        "next": {"type": "integer", "nullable": True},
                    },
                },
                "State": {
                    "type": "object",
                    "required": ["runId", "step", "branch", "threads", "usage", "status"],
                    "properties": {
                        "runId": {"type": "string"},
                        "step": {"type": "integer"},
                        "branch": {"type": "integer"},
                        "location": {"type": "object", "nullable": True},
                        "locals": obj,
                        "globals": obj,
                        "frames": {"type": "array", "items": obj},
                        "threads": obj,
                        "activeThread": {"type": "string"},
                        "output": {"type": "array", "items": {"type": "string"}},
                        "usage": obj,
                        "status": {"type": "string"},
                        "result": any_,
                        "error": {"type": "string", "nullable": True},
                    },
                },
                "Checkpoint": {
                    "type": "object",
                    "required": ["id", "runId", "agent", "roundtrip", "timestamp", "tokenUsage"],
                    "properties": {
                        "id": {"type": "string"},
                        "runId": {"type": "string"},
                        "agent": {"type": "string"},
                        "roundtrip": {"type": "integer"},
                        "timestamp": {"type": "integer"},
                        "tokenUsage": obj,
                        "branch": {"type": "integer"},
                        "step": {"type": "integer"},
                        "messageCount": {"type": "integer"},
                        "location": {"type": "string", "nullable": True},
                        "messages": {"type": "array", "items": {}},
                        "sessionState": obj,
                    },
                },
                "CheckpointPage": {
                    "type": "object",
                    "required": ["runId", "checkpoints", "limit", "offset", "next"],
                    "properties": {
                        "runId": {"type": "string"},
                        "checkpoints": {
                            "type": "array",
                            "items": {"$ref": "#/components/schemas/Checkpoint"},
                        },
                        "limit": {"type": "integer"},
                        "offset": {"type": "integer"},
                        "next": {"type": "integer", "nullable": True},
                    },
                },
                "Rollback": {
                    "type": "object",
                    "properties": {"discard": {"type": "boolean"}},
                },
                "RolledBack": {
                    "type": "object",
                    "required": ["checkpoint", "discarded"],
                    "properties": {
                        "checkpoint": {"$ref": "#/components/schemas/Checkpoint"},
                        "discarded": {"type": "boolean"},
                    },
                },
            },
        },
        "paths": {
            "/runs": {
                "get": {
                    "summary": "Runs, newest first",
                    "parameters": [limit, offset],
                    "responses": {"200": _ok("RunPage"), **_errors(400)},
                }
            },
            "/runs/{runId}": {
                "get": {
                    "summary": "One run and its branches",
                    "parameters": [run_id],
                    "responses": {"200": _ok("Run"), **_errors(404)},
                }
            },
            "/runs/{runId}/steps/{step}": {
                "get": {
                    "summary": "The state at a step",
                    "parameters": [
                        run_id,
                        _param("step", "path", {"type": "integer"}),
                        _param(
                            "branch",
                            "query",
                            {"type": "integer", "minimum": 0, "maximum": MAX_OFFSET},
                            False,
                        ),
                    ],
                    "responses": {"200": _ok("State"), **_errors(400, 404)},
                }
            },
            "/runs/{runId}/checkpoints": {
                "get": {
                    "summary": "A Python agent's checkpoints, oldest first",
                    "parameters": [run_id, limit, offset],
                    "responses": {"200": _ok("CheckpointPage"), **_errors(400, 404)},
                }
            },
            "/runs/{runId}/rollback/{checkpointId}": {
                "post": {
                    "summary": "Roll a run back to a checkpoint",
                    "parameters": [run_id, cp_id],
                    "requestBody": body,
                    "responses": {"200": _ok("RolledBack"), **_errors(400, 404, 409)},
                }
            },
            "/agents/{name}/checkpoints": {
                "get": {
                    "summary": "An agent's checkpoints of one run",
                    "parameters": [
                        name,
                        _param("runId", "query", text),
                        limit,
                        offset,
                    ],
                    "responses": {"200": _ok("CheckpointPage"), **_errors(400, 404)},
                }
            },
            "/agents/{name}/rollback/{checkpointId}": {
                "post": {
                    "summary": "Roll an agent's run back to a checkpoint",
                    "parameters": [name, cp_id],
                    "requestBody": body,
                    "responses": {"200": _ok("RolledBack"), **_errors(400, 404, 409)},
                }
            },
            "/openapi.json": {
                "get": {
                    "summary": "This schema",
                    "responses": {
                        "200": {
                            "description": "OK",
                            "content": {"application/json": {"schema": obj}},
                        },
                    },
                }
            },
        },
    }
    if token:
        out["security"] = [{"bearer": []}]
        for path in out["paths"].values():
            for op in path.values():
                op["responses"].update(_errors(401))
    return out


# -- the ASGI app -------------------------------------------------------------------------------


def _int(params: Any, name: str, default: int, lo: int, hi: int | None = None) -> int:
    text = params.get(name)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise HTTPError(400, f"{name} must be an integer, not {text!r}") from None
    if value < lo or (hi is not None and value > hi):
        bound = f"{lo}..{hi}" if hi is not None else f"{lo} or more"
        raise HTTPError(400, f"{name} must be {bound}, not {value}")
    return value


def create_app(store: Any, token: str | None = None) -> Any:
    """The Starlette app serving `store` (a `RunStore`); with `token`, every request needs it."""
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    api = API(store)
    schema = openapi_schema(token is not None)

    def answer(data: Any, status: int = 200) -> JSONResponse:
        return JSONResponse(json.loads(json.dumps(data, default=str)), status_code=status)

    def error(status: int, message: str) -> JSONResponse:
        return JSONResponse({"error": {"status": status, "message": message}}, status_code=status)

    def endpoint(fn: Any) -> Any:
        def run(request: Request) -> JSONResponse:
            try:
                return answer(fn(request))
            except HTTPError as e:
                return error(e.status, e.message)

        return run

    async def discard_of(request: Request) -> bool:
        raw = await request.body()
        if not raw.strip():
            return False
        try:
            data = loads_json(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            raise HTTPError(400, f"the request body is not JSON: {e}") from None
        if not isinstance(data, dict):
            raise HTTPError(400, "the request body must be a JSON object")
        discard = data.get("discard", False)
        if not isinstance(discard, bool):
            raise HTTPError(400, "discard must be true or false")
        return discard

    def page(request: Request) -> tuple[int, int]:
        q = request.query_params
        return _int(q, "limit", 50, 1, MAX_LIMIT), _int(q, "offset", 0, 0, MAX_OFFSET)

    @endpoint
    def runs(request: Request) -> Any:
        return api.runs(*page(request))

    @endpoint
    def run(request: Request) -> Any:
        return api.run_detail(request.path_params["run"])

    @endpoint
    def step(request: Request) -> Any:
        p = request.path_params
        try:
            n = int(p["step"])
        except ValueError:
            raise HTTPError(400, f"step must be an integer, not {p['step']!r}") from None
        q = request.query_params
        branch = _int(q, "branch", -1, 0, MAX_OFFSET) if "branch" in q else None
        return api.step(p["run"], n, branch)

    @endpoint
    def checkpoints(request: Request) -> Any:
        return api.checkpoints(request.path_params["run"], *page(request))

    @endpoint
    def agent_checkpoints(request: Request) -> Any:
        run_ref = request.query_params.get("runId")
        if not run_ref:
            raise HTTPError(400, "runId is required (?runId=RUN)")
        return api.checkpoints(run_ref, *page(request), agent=request.path_params["name"])

    async def rollback(request: Request) -> JSONResponse:
        try:
            discard = await discard_of(request)
        except HTTPError as e:
            return error(e.status, e.message)
        p = request.path_params
        from starlette.concurrency import run_in_threadpool

        def go() -> Any:
            return api.rollback(p["checkpoint"], discard, p.get("run"), p.get("name"))

        try:
            return answer(await run_in_threadpool(go))
        except HTTPError as e:
            return error(e.status, e.message)

    def openapi(request: Request) -> JSONResponse:
        return JSONResponse(schema)

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        if not isinstance(exc, HTTPException):
            return error(500, "internal error")
        response = error(exc.status_code, str(exc.detail))
        response.headers.update(exc.headers or {})  # 405's Allow
        return response

    async def server_error(request: Request, exc: Exception) -> JSONResponse:
        return error(500, f"internal error: {type(exc).__name__}: {exc}")

    routes = [
        Route("/runs", runs, methods=["GET"]),
        Route("/runs/{run}", run, methods=["GET"]),
        Route("/runs/{run}/steps/{step}", step, methods=["GET"]),
        Route("/runs/{run}/checkpoints", checkpoints, methods=["GET"]),
        Route("/runs/{run}/rollback/{checkpoint}", rollback, methods=["POST"]),
        Route("/agents/{name}/checkpoints", agent_checkpoints, methods=["GET"]),
        Route("/agents/{name}/rollback/{checkpoint}", rollback, methods=["POST"]),
        Route("/openapi.json", openapi, methods=["GET"]),
    ]
    app = Starlette(
        routes=routes, exception_handlers={HTTPException: http_error, Exception: server_error}
    )
    if token is None:
        return app
    expected = f"Bearer {token}".encode()

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, expected):
                response = error(401, "this server needs a token: Authorization: Bearer TOKEN")
                await response(scope, receive, send)
                return
        await app(scope, receive, send)

    return guarded


# -- the command ----------------------------------------------------------------------------------


def register(cli: click.Group) -> None:
    cli.add_command(serve)


@click.command()
@click.option("--db", default=None, help="Run store (a path or URL; default .agency/runs.db).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option(
    "--port",
    default=DEFAULT_PORT,
    type=click.IntRange(0, 65535),
    show_default=True,
    help="Port (0: any free one).",
)
@click.option(
    "--token",
    default=None,
    envvar="AGENCY_TOKEN",
    help="Token every request must carry (Authorization: Bearer …); needed off loopback.",
)
def serve(db: str | None, host: str, port: int, token: str | None) -> None:
    """Serve the run store over HTTP: runs, steps, Python agents' checkpoints and rollback,
    with an OpenAPI schema at /openapi.json.

    \b
    Examples:
      agency serve                              # http://127.0.0.1:8321
      agency serve --db runs.db --port 0        # any free port (printed)
      AGENCY_TOKEN=s3cret agency serve --host 0.0.0.0
    """
    if not is_loopback(host) and not token:
        raise UsageError(
            f"binding to {host} serves the run store beyond this machine: give --token "
            "(or AGENCY_TOKEN), which every request must then carry"
        )
    try:
        import uvicorn
    except ModuleNotFoundError:
        raise UsageError(
            "agency serve needs the optional extra 'serve': pip install 'agency-debugger[serve]'"
        ) from None
    from runtime.api import open_store

    store = open_store(db).backend
    app = create_app(store, token or None)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    _announce(server, host)
    try:
        server.run()
    finally:
        store.close()


def _announce(server: Any, host: str) -> None:
    """Print the address once the socket listens (with --port 0, the port it got)."""
    startup = server.startup

    async def announced(sockets: Any = None) -> None:
        await startup(sockets=sockets)
        for s in server.servers:
            for sock in s.sockets:
                port = sock.getsockname()[1]
                click.echo(f"agency serve: listening on http://{host}:{port}")
                sys.stdout.flush()
                return

    server.startup = announced
