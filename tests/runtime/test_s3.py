"""std::aws/s3: SigV4 signing against AWS's published example, and the S3 functions answered by
fetch mocks (no network), with credentials from the environment."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from runtime.language.program import load_program
from runtime.runs.runner import RunConfig, decision_from, drive, new_machine
from runtime.vm.builtins_aws import endpoint, query_string, sign
from runtime.vm.values import to_plain
from runtime.vm.writelog import HALTED

# The presigned-URL example of the S3 SigV4 documentation ("Authenticating Requests: Using
# Query Parameters").
DOC_KEY = "AKIAIOSFODNN7EXAMPLE"
DOC_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def test_presign_signature_matches_the_aws_example() -> None:
    when = datetime.datetime(2013, 5, 24, 0, 0, 0, tzinfo=datetime.UTC)
    query = {
        "X-Amz-Algorithm": "AWS4-HMAC-SHA256",
        "X-Amz-Credential": f"{DOC_KEY}/20130524/us-east-1/s3/aws4_request",
        "X-Amz-Date": "20130524T000000Z",
        "X-Amz-Expires": "86400",
        "X-Amz-SignedHeaders": "host",
    }
    url = "https://examplebucket.s3.amazonaws.com/test.txt"
    headers = {"host": "examplebucket.s3.amazonaws.com"}
    creds = (DOC_KEY, DOC_SECRET, "")
    got = sign("GET", url, "us-east-1", headers, "UNSIGNED-PAYLOAD", when, creds, query)
    assert got == "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"
    assert "X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524" in query_string(query)


def test_endpoints() -> None:
    assert endpoint("photos", "eu-west-1") == "https://photos.s3.eu-west-1.amazonaws.com"
    assert endpoint("my.site", "us-east-1") == "https://s3.us-east-1.amazonaws.com/my.site"
    assert endpoint("data", "cn-north-1") == "https://data.s3.cn-north-1.amazonaws.com.cn"


PROGRAM = """
import { s3Put, s3Get, s3GetBinary, s3PresignGet } from "std::aws/s3"

node main(): any {
  const put = s3Put("photos", "a/b.txt", "hello", "eu-west-1") with approve
  const got = s3Get("photos", "a/b.txt", "eu-west-1") with approve
  const bin = s3GetBinary("photos", "a/b.txt", "eu-west-1") with approve
  const bad = s3Get("photos", "../x", "eu-west-1") with approve
  const link = s3PresignGet("photos", "a/b.txt", 60000, "eu-west-1") with approve
  return [put.value, got.value, bin.value, bad.error, link.value.includes("X-Amz-Expires=60&")]
}
"""


def _run(tmp_path: Path, mocks: list[dict[str, object]]) -> object:
    source = tmp_path / "s3.agency"
    source.write_text(PROGRAM, encoding="utf-8")
    program = load_program(source)
    config = RunConfig(model_spec="sim", root=str(tmp_path), quiet=True, fetch_mocks=mocks)
    m = new_machine(program, config)
    drive(m, lambda p: decision_from("approve"))
    assert m.status == HALTED, m.error
    return to_plain(m.result)


def test_requests_answered_by_mocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", DOC_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", DOC_SECRET)
    mocks = [
        {
            "url": "https://photos.s3.eu-west-1.amazonaws.com/a/b.txt",
            "method": "PUT",
            "body": "hello",
            "return": "",
            "headers": {"ETag": '"abc"'},
        },
        {"url": "https://photos.s3.eu-west-1.amazonaws.com/a/b.txt", "return": "hi there"},
    ]
    put, got, binary, bad, presigned = _run(tmp_path, mocks)  # type: ignore[misc]
    assert put == {
        "bucket": "photos",
        "key": "a/b.txt",
        "url": "https://photos.s3.eu-west-1.amazonaws.com/a/b.txt",
        "etag": '"abc"',
    }
    assert got == "hi there"
    assert binary == "aGkgdGhlcmU="
    assert "not an object key" in bad
    assert presigned is True


def test_missing_credentials_are_a_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
    source = tmp_path / "s3.agency"
    source.write_text(
        'import { s3Put } from "std::aws/s3"\n'
        "node main(): any {\n"
        '  const r = s3Put("photos", "k", "x") with approve\n'
        "  return [r.error, r.destructiveRan]\n"
        "}\n",
        encoding="utf-8",
    )
    config = RunConfig(model_spec="sim", root=str(tmp_path), quiet=True, fetch_mocks=[])
    m = new_machine(load_program(source), config)
    drive(m, lambda p: decision_from("approve"))
    error, ran = to_plain(m.result)  # type: ignore[misc]
    assert "no AWS credentials" in error and ran is True
