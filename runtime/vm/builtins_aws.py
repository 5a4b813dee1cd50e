"""Provides the host functions behind `std::aws/s3`: S3 requests signed with AWS Signature
Version 4 (no SDK), and presigned download URLs.

Credentials come from the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, optionally
AWS_SESSION_TOKEN); the region from the call, else AWS_REGION, else us-east-1. A request is an
effect through the journal (`perform`, as std::http's): a resumed or replayed run is served the
recorded answer and never sends it again. Under `agency test` the suite's `fetchMocks` answer
it. A presigned URL is computed locally (no request) from the clock, which is an input of the
run (`observe`): a replay computes the same URL.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import hashlib
import hmac
import os
import re
import urllib.parse
from typing import TYPE_CHECKING, Any

from runtime.errors import AgencyRuntimeError
from runtime.vm.builtin_base import arg, builtin
from runtime.vm.builtins_http import Response, mocked, send
from runtime.vm.effects import observe, perform
from runtime.vm.values import JSObject, to_number, to_str

if TYPE_CHECKING:
    from runtime.vm.machine import Machine

MAX_PRESIGN_MS = 7 * 24 * 3600 * 1000  # what S3 accepts: 7 days
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


def _s(v: Any) -> str:
    return v if type(v) is str else to_str(v)


def _region(region: Any) -> str:
    return _s(region or "") or os.environ.get("AWS_REGION") or "us-east-1"


def _credentials() -> tuple[str, str, str]:
    key = os.environ.get("AWS_ACCESS_KEY_ID", "")
    secret = os.environ.get("AWS_SECRET_ACCESS_KEY", "")
    if not key or not secret:
        raise AgencyRuntimeError(
            "S3: no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
        )
    return key, secret, os.environ.get("AWS_SESSION_TOKEN", "")


def _check(bucket: str, key: str | None) -> None:
    if not _BUCKET.match(bucket):
        raise AgencyRuntimeError(f"S3: {bucket!r} is not a valid bucket name")
    if key is not None:
        if not key or any(part in (".", "..") for part in key.split("/")):
            raise AgencyRuntimeError(f"S3: {key!r} is not an object key this module accepts")


def endpoint(bucket: str, region: str) -> str:
    """The bucket's virtual-hosted endpoint (path-style when the name holds dots)."""
    suffix = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
    if "." in bucket:
        return f"https://s3.{region}.{suffix}/{bucket}"
    return f"https://{bucket}.s3.{region}.{suffix}"


def _quote_key(key: str) -> str:
    return urllib.parse.quote(key, safe="/-_.~")


def _signing_key(secret: str, day: str, region: str) -> bytes:
    k = hmac.new(("AWS4" + secret).encode(), day.encode(), hashlib.sha256).digest()
    for part in (region, "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    return k


def query_string(query: dict[str, str]) -> str:
    """A query string as SigV4 writes it: sorted, every reserved character escaped."""
    return "&".join(
        f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
        for k, v in sorted(query.items())
    )


def sign(
    method: str,
    url: str,
    region: str,
    headers: dict[str, str],
    payload_hash: str,
    when: datetime.datetime,
    creds: tuple[str, str, str],
    query: dict[str, str] | None = None,
) -> str:
    """The SigV4 signature of a request (headers must hold `host`; names lower-case)."""
    secret = creds[1]
    day, stamp = when.strftime("%Y%m%d"), when.strftime("%Y%m%dT%H%M%SZ")
    parts = urllib.parse.urlsplit(url)
    canonical_query = query_string(query or {})
    names = sorted(headers)
    canonical = "\n".join(
        [
            method,
            parts.path or "/",
            canonical_query,
            "".join(f"{n}:{headers[n].strip()}\n" for n in names),
            ";".join(names),
            payload_hash,
        ]
    )
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join(
        ["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()]
    )
    return hmac.new(_signing_key(secret, day, region), to_sign.encode(), hashlib.sha256).hexdigest()


def _request(
    m: Machine, op: str, method: str, url: str, region: str, body: bytes, content_type: str
) -> Response:
    creds = _credentials()
    when = datetime.datetime.now(datetime.UTC)
    payload_hash = hashlib.sha256(body).hexdigest()
    headers = {
        "host": urllib.parse.urlsplit(url).netloc,
        "x-amz-content-sha256": payload_hash,
        "x-amz-date": when.strftime("%Y%m%dT%H%M%SZ"),
    }
    if content_type:
        headers["content-type"] = content_type
    if creds[2]:
        headers["x-amz-security-token"] = creds[2]
    signature = sign(method, url, region, headers, payload_hash, when, creds)
    scope = f"{when.strftime('%Y%m%d')}/{region}/s3/aws4_request"
    headers["authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={creds[0]}/{scope}, "
        f"SignedHeaders={';'.join(sorted(headers))}, Signature={signature}"
    )
    mocks = m.world.fetch_mocks
    if mocks is not None:
        return mocked(mocks, method, url, body.decode("utf-8", errors="replace"))
    return send(method, url, headers, body if method in ("PUT", "POST") else None)


def _failed(op: str, resp: Response) -> AgencyRuntimeError:
    snippet = " ".join(resp.text.split())[:300]
    code = re.search(r"<Code>([^<]+)</Code>", resp.text)
    what = code.group(1) if code else resp.reason or "error"
    return AgencyRuntimeError(f"S3 {op} failed: HTTP {resp.status} {what}: {snippet}")


@builtin("__s3_call")
def _s3_call(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """One S3 operation: get, getBinary, put, putBinary or createBucket."""
    op = _s(arg(args, named, 0, "op", ""))
    bucket = _s(arg(args, named, 1, "bucket", ""))
    key = _s(arg(args, named, 2, "key", "") or "")
    region = _region(arg(args, named, 3, "region"))
    content = arg(args, named, 4, "content")
    content_type = _s(arg(args, named, 5, "contentType", "") or "")
    _check(bucket, None if op == "createBucket" else key)
    base = endpoint(bucket, region)
    body = b""
    if op == "put":
        body = _s(content or "").encode("utf-8")
    elif op == "putBinary":
        try:
            body = base64.b64decode(_s(content or ""), validate=True)
        except binascii.Error:
            raise AgencyRuntimeError("S3 putBinary: the content is not valid base64") from None
    elif op == "createBucket" and region != "us-east-1":
        body = (
            '<CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
            f"<LocationConstraint>{region}</LocationConstraint></CreateBucketConfiguration>"
        ).encode()
    method = "GET" if op in ("get", "getBinary") else "PUT"
    url = base + "/" if op == "createBucket" else f"{base}/{_quote_key(key)}"

    def act() -> Any:
        resp = _request(m, op, method, url, region, body, content_type if body else "")
        if not 200 <= resp.status < 300:
            raise _failed(op, resp)
        if op == "get":
            return resp.text
        if op == "getBinary":
            return base64.b64encode(resp.data).decode()
        if op == "createBucket":
            location = resp.headers.get("location", f"/{bucket}")
            return JSObject({"bucket": bucket, "region": region, "location": location})
        return JSObject(
            {"bucket": bucket, "key": key, "url": url, "etag": resp.headers.get("etag", "")}
        )

    return perform(m, f"s3 {op}", {"bucket": bucket, "key": key, "region": region}, act)


@builtin("__s3_presign")
def _s3_presign(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """A presigned GET URL of an object, valid for `expiresIn` milliseconds."""
    bucket = _s(arg(args, named, 0, "bucket", ""))
    key = _s(arg(args, named, 1, "key", ""))
    ms = to_number(arg(args, named, 2, "expiresIn", 3600000))
    region = _region(arg(args, named, 3, "region"))
    _check(bucket, key)
    if ms != ms or not 1 <= ms <= MAX_PRESIGN_MS:
        raise AgencyRuntimeError(
            f"S3 presignGet: expiresIn must be 1 to {MAX_PRESIGN_MS} ms (7 days), not {to_str(ms)}"
        )
    creds = _credentials()
    seconds = max(1, int(ms // 1000))

    def act() -> str:
        when = datetime.datetime.now(datetime.UTC)
        url = f"{endpoint(bucket, region)}/{_quote_key(key)}"
        query = {
            "X-Amz-Algorithm": "AWS4-HMAC-SHA256",
            "X-Amz-Credential": f"{creds[0]}/{when.strftime('%Y%m%d')}/{region}/s3/aws4_request",
            "X-Amz-Date": when.strftime("%Y%m%dT%H%M%SZ"),
            "X-Amz-Expires": str(seconds),
            "X-Amz-SignedHeaders": "host",
        }
        if creds[2]:
            query["X-Amz-Security-Token"] = creds[2]
        headers = {"host": urllib.parse.urlsplit(url).netloc}
        signature = sign("GET", url, region, headers, "UNSIGNED-PAYLOAD", when, creds, query)
        return f"{url}?{query_string(query)}&X-Amz-Signature={signature}"

    return observe(m, "s3 presign", {"bucket": bucket, "key": key}, act)
