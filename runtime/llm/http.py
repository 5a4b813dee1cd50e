"""Provides the HTTP plumbing the remote providers share: POST JSON, retry, explain failures.

`JsonEndpoint.post` sends one JSON request with bounded retries (exponential backoff, honouring
`Retry-After`) on 429, 5xx, connection errors and timeouts, and turns every failure into an
`LLMError` that names the provider and says what to do. API keys live only in the request
headers; every text that leaves this module (errors, logs, recorded bodies) is redacted.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from runtime.llm.base import (
    DEADLINE,
    TRANSPORT,
    CallTransport,
    DeadlinePassed,
    LLMError,
    redact,
    redact_json,
)

if TYPE_CHECKING:  # httpx costs ~150 ms to import; only remote models pay for it.
    import httpx

log = logging.getLogger("agency.llm")

# Statuses worth another try: request timeout, conflict, rate limit (and every 5xx).
_RETRYABLE = frozenset({408, 409, 429})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how patiently to retry a request that may succeed later."""

    max_retries: int = 3  # retries after the first attempt
    base_delay: float = 0.5  # seconds before the first retry; doubles each time
    max_delay: float = 20.0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number `attempt` (0-based)."""
        backoff = self.base_delay * (2.0**attempt)
        wanted = max(backoff, retry_after or 0.0)
        return min(wanted, self.max_delay)


def host_of(url: str) -> str:
    """`host[:port]` of a URL, for messages and stored configs."""
    try:
        parts = urlsplit(url)
    except ValueError:  # `http://[::1`: checked, with a message, by `check_base_url`
        return url
    return parts.netloc.rsplit("@", 1)[-1] or url


def check_base_url(url: str, provider: str) -> None:
    """Refuse, before any request, a base URL that httpx cannot send to: not http(s), no host,
    a bad port, a host name that is not one (`--base-url`, `OPENAI_BASE_URL`, …)."""
    try:
        parts = urlsplit(url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
        if ok:
            (parts.hostname or "").encode("idna")
    except (ValueError, UnicodeError):
        ok = False
    if not ok:
        shown = repr(url[:80]) if "@" not in url else "(not shown: it holds credentials)"
        raise LLMError(
            f"{provider}: the base URL {shown} is not an http:// or https:// URL with a host "
            "(e.g. http://localhost:11434/v1)",
            provider=provider,
        )


class JsonEndpoint:
    """One provider's HTTP endpoint: a base URL, fixed headers, a timeout and a retry policy."""

    def __init__(
        self,
        *,
        provider: str,
        base_url: str,
        headers: Mapping[str, str],
        timeout: float,
        retry: RetryPolicy,
        secrets: tuple[str, ...] = (),
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.provider = provider
        check_base_url(base_url, provider)
        self.base_url = base_url.rstrip("/")
        self.host = host_of(self.base_url)
        self.timeout = timeout
        self.retry = retry
        self._headers = dict(headers)
        self._secrets = tuple(s for s in secrets if s)
        self._transport = transport
        self._client: httpx.Client | None = None

    def __repr__(self) -> str:
        return f"JsonEndpoint({self.provider!r}, {self.base_url!r})"

    def _given_up(self) -> DeadlinePassed:
        return DeadlinePassed(
            f"{self.provider}: the request was given up: a time guard's budget ran out",
            provider=self.provider,
        )

    def clean(self, text: str) -> str:
        """`text` with the secrets removed."""
        return redact(text, self._secrets)

    def clean_json(self, value: Any) -> Any:
        """A copy of a JSON value with the secrets removed."""
        return redact_json(value, self._secrets)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _http(self) -> httpx.Client:
        if self._client is None:
            import httpx

            self._client = httpx.Client(
                timeout=httpx.Timeout(self.timeout),
                headers=self._headers,
                transport=self._transport,
                follow_redirects=True,
            )
        return self._client

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST `body` to `base_url + path` and return the JSON answer, retrying what may pass.

        Raises `LLMError` (with `status` and `detail`) for a refused request, a body that is
        not JSON, or when the retries run out.
        """
        import httpx

        url = self.base_url + path
        client = self._http()
        call = TRANSPORT.get() or CallTransport()
        max_retries = self.retry.max_retries if call.retries is None else max(0, call.retries)
        timeout: float | None = self.timeout if call.timeout is None else call.timeout or None
        attempts = max_retries + 1
        last = ""
        last_status: int | None = None
        timed_out = False
        deadline = DEADLINE.get()  # a time guard's budget ends then: give up there
        for attempt in range(attempts):
            retry_after: float | None = None
            limit = timeout
            cut_short = False  # the guard's deadline, not the call's timeout, bounds this try
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise self._given_up()
                cut_short = timeout is None or left < timeout
                limit = left if cut_short else timeout
            try:
                response = client.post(url, json=body, timeout=limit)
            except httpx.TimeoutException:
                if cut_short:
                    raise self._given_up() from None
                timed_out = True
                last_status = None
                reason = "timeout"
                last = f"no answer within {timeout or 0:g}s (timeout)"
                limit_ms = round((timeout or 0) * 1000)
                call.events.append(
                    {"hook": "onLLMTimeout", "data": {"limitMs": limit_ms, "attempt": attempt}}
                )
            except httpx.TransportError as exc:
                timed_out = False
                last_status = None
                reason = "connectionLost"
                if isinstance(exc, httpx.RemoteProtocolError):
                    reason = "streamInterrupted"
                last = f"cannot connect to {self.host} ({self.clean(_reason(exc))})"
            else:
                status = response.status_code
                if status in _RETRYABLE or status >= 500:
                    timed_out = False
                    last_status = status
                    reason = _retry_reason(status)
                    detail = self._detail(response)
                    last = f"{status} {_phrase(response)}" + (f": {detail}" if detail else "")
                    retry_after = _retry_after(response.headers.get("retry-after"))
                elif status >= 400:
                    raise self._refused(response)
                else:
                    return self._json(response)
            if attempt + 1 < attempts:
                wait = self._delay(call, attempt, retry_after)
                log.info(
                    "%s: %s; retry %d of %d in %.2fs",
                    self.provider,
                    last,
                    attempt + 1,
                    max_retries,
                    wait,
                )
                if deadline is not None and time.monotonic() + wait >= deadline:
                    raise self._given_up()
                call.events.append(
                    {
                        "hook": "onLLMRetry",
                        "data": {
                            "attempt": attempt + 1,
                            "maxRetries": max_retries,
                            "delayMs": round(wait * 1000),
                            "reason": reason,
                            "detail": last[:500],
                        },
                    }
                )
                self.retry.sleep(wait)
        tries = f"{attempts} attempt{'' if attempts == 1 else 's'}"
        if timed_out:
            message = (
                f"{self.provider}: timeout: {self.host} gave no answer within {timeout or 0:g}s "
                f"({tries}); try again, or raise the timeout with AGENCY_LLM_TIMEOUT=SECONDS"
            )
        elif last_status is None:
            message = (
                f"{self.provider}: {last} after {tries}; check that the server is running and "
                "that the base URL is right"
            )
        elif last_status == 429:
            message = (
                f"{self.provider}: rate limited by {self.host} ({last}) after {tries}; wait "
                "and try again, or check your plan's limits"
            )
        else:
            message = (
                f"{self.provider}: {self.host} kept failing ({last}) after {tries}; the service "
                "may be down, try again later"
            )
        raise LLMError(message, provider=self.provider, status=last_status, detail=last)

    def _delay(self, call: CallTransport, attempt: int, retry_after: float | None) -> float:
        """Seconds before retry `attempt + 1`: the call's own backoff when it gives one (as the
        reference: `initial * factor ** attempt`, a `Retry-After` instead when the server sent
        one, at most `max`), else the provider's policy."""
        if call.initial is None and call.factor is None and call.max is None:
            return self.retry.delay(attempt, retry_after)
        initial = 0.5 if call.initial is None else call.initial
        factor = 2.0 if call.factor is None else call.factor
        most = 10.0 if call.max is None else call.max
        wanted = retry_after if retry_after is not None else initial * factor**attempt
        return max(0.0, min(wanted, most))

    def _json(self, response: httpx.Response) -> dict[str, Any]:
        try:
            data = response.json()
        except ValueError:
            data = None
        if not isinstance(data, dict):
            snippet = self.clean(response.text.strip())[:200] or "(empty)"
            raise LLMError(
                f"{self.provider}: {self.host} answered {response.status_code} with a body "
                f"that is not a JSON object: {snippet}; check that the base URL points at the "
                "provider's API",
                provider=self.provider,
                status=response.status_code,
                detail=snippet,
            )
        cleaned: dict[str, Any] = self.clean_json(data)
        return cleaned

    def _detail(self, response: httpx.Response) -> str:
        """The server's own explanation of an error, redacted and short."""
        try:
            data = response.json()
        except ValueError:
            data = None
        text = ""
        if isinstance(data, dict):
            err = data.get("error", data)
            if isinstance(err, dict):
                text = str(err.get("message") or err.get("detail") or "")
            elif isinstance(err, str):
                text = err
            if not text and isinstance(data.get("detail"), str):
                text = data["detail"]
        if not text:
            text = response.text.strip()
        text = " ".join(self.clean(text).split())
        return text if len(text) <= 300 else text[:299] + "…"

    def _refused(self, response: httpx.Response) -> LLMError:
        status = response.status_code
        detail = self._detail(response)
        said = f" ({detail})" if detail else ""
        if status in (401, 403):
            fix = {
                "openai": "check OPENAI_API_KEY",
                "anthropic": "check ANTHROPIC_API_KEY",
            }.get(self.provider, "check the API key")
            what = "rejected the API key" if status == 401 else "refused access with this key"
            message = f"{self.provider}: {self.host} {what} ({status}){said}; {fix}"
        elif status == 404:
            message = (
                f"{self.provider}: {self.host} answered 404 Not Found{said}; check the model "
                "name (--model or AGENCY_MODEL) and that the base URL is the API root "
                "(e.g. ending in /v1)"
            )
        else:
            message = f"{self.provider}: {self.host} refused the request ({status}){said}"
        return LLMError(message, provider=self.provider, status=status, detail=detail)


def _retry_reason(status: int) -> str:
    """The `reason` onLLMRetry callbacks get for a status worth another try."""
    if status == 429:
        return "rateLimit"
    if status == 529:
        return "overloaded"
    if status == 408:
        return "timeout"
    return "serverError"


def _phrase(response: httpx.Response) -> str:
    return response.reason_phrase or "error"


def _reason(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return " ".join(text.split())[:200]


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None
