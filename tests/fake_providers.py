"""Fakes of the clouds that serve Claude, each speaking its own wire to the SDK's own client and then answering as
tests/fake_anthropic.py does (the same scripts, the same strict request rules):

- FakeBedrock: `POST /model/{id}/invoke-with-response-stream`, the SigV4 signature checked with botocore against
  the test's credentials (`accept`: the keys it takes now), the reply in AWS event-stream framing.
- FakeVertex: `POST /v1/projects/{p}/locations/{r}/publishers/anthropic/models/{id}:streamRawPredict` with a Google
  bearer token it issued at `POST /token` (a service account's JWT grant, as google-auth sends it, its signature
  checked), the body's `anthropic_version` checked; `tokens_valid_for` seconds per token.
- FakeFoundry: `POST /anthropic/v1/messages` with the key in both `x-api-key` and `api-key`, or an Entra ID
  bearer token it issued as a managed identity endpoint (`GET /msi/token`).
- FakeGateway: Anthropic's wire, refusing any `anthropic-beta` it was not told it takes ("invalid beta flag", as
  real gateways and Bedrock do), and a bearer key it does not accept (401).
Each records what it refused in `refusals` ((status, why) pairs) and the raw paths in `paths`.
"""

from __future__ import annotations

import base64
import hmac
import json
import re
import secrets
import threading
import time
import zlib
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from tests.fake_anthropic import FakeAnthropic, Json, _Handler

# Vertex takes the API version in the body, not a header: `vertex-2023-10-16` as first documented, or the dated
# version the SDK's Vertex client sends (2.15: its own ANTHROPIC_API_VERSION).
VERTEX_VERSION = re.compile(r"(?:vertex-)?\d{4}-\d{2}-\d{2}")


class _ProviderHandler(_Handler):
    """Reads the request, lets the provider's fake check and translate it, then answers as the first party."""

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        fake: ProviderFake = getattr(self.server, "fake")  # noqa: B009 - set by FakeAnthropic.start
        headers = {k.lower(): v for k, v in self.headers.items()}
        with fake.lock:
            fake.paths.append(self.path)
        refusal = fake.check(self.path, headers, raw)
        if isinstance(refusal, tuple):
            status, body = refusal
            with fake.lock:
                fake.refusals.append((status, json.dumps(body)))
            return self._json(status, body, {"x-should-retry": "false"})
        if isinstance(refusal, dict):  # an answer of its own (a token)
            return self._json(200, refusal, {})
        translated = fake.translate(self.path, self._parsed(raw))
        if translated is None:
            return self._json(404, {"message": f"fake: no route {self.path}"}, {})
        self._answer(translated[0], translated[1], raw)

    def do_GET(self) -> None:
        fake: ProviderFake = getattr(self.server, "fake")  # noqa: B009
        answer = fake.get(self.path, {k.lower(): v for k, v in self.headers.items()})
        if answer is None:
            return super().do_GET()
        return self._json(answer[0], answer[1], {})

    def _frame(self, name: str, data: Json) -> bytes:
        fake: ProviderFake = getattr(self.server, "fake")  # noqa: B009
        return fake.frame(name, data) or super()._frame(name, data)

    @property
    def content_type(self) -> str:  # pyright: ignore[reportIncompatibleVariableOverride]
        fake: ProviderFake = getattr(self.server, "fake")  # noqa: B009
        return fake.stream_type


class ProviderFake(FakeAnthropic):
    handler = _ProviderHandler
    stream_type = "text/event-stream"  # the content type of a streamed answer

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lock = threading.Lock()
        self.paths: list[str] = []
        self.refusals: list[tuple[int, str]] = []

    def check(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, Json] | Json | None:
        """A refusal (status, body), an answer of its own, or None to go on."""
        return None

    def get(self, path: str, headers: dict[str, str]) -> tuple[int, Json] | None:
        """A GET of its own (a token endpoint), or None for the first party's `/v1/models`."""
        return None

    def translate(self, path: str, body: Any) -> tuple[str, Any] | None:
        return urlsplit(path).path, body

    def frame(self, name: str, data: Json) -> bytes | None:
        return None


# ---------------------------------------------------------------- Bedrock


class FakeBedrock(ProviderFake):
    stream_type = "application/vnd.amazon.eventstream"  # as Bedrock sends its binary frames

    def __init__(self, *args: Any, region: str, accept: tuple[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.region = region
        self.accept = accept  # (access key id, secret key) whose signature it takes: a test may swap them

    def check(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, Json] | Json | None:
        why = _sigv4_problem(f"http://127.0.0.1:{self.port}{path}", headers, raw, self.accept, self.region)
        if why is None:
            return None
        # As Bedrock answers a key it no longer takes (an expired session token is a 403 there too).
        return 403, {"message": f"The security token included in the request is invalid ({why})"}

    def translate(self, path: str, body: Any) -> tuple[str, Any] | None:
        return bedrock_messages(path, body)

    def frame(self, name: str, data: Json) -> bytes | None:
        chunk = json.dumps({"bytes": base64.b64encode(json.dumps(data).encode()).decode()}).encode()
        headers = {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"}
        return event_stream_message(headers, chunk)


def bedrock_messages(path: str, body: Any) -> tuple[str, Any] | None:
    """A Bedrock request as the Messages API request it stands for (the model from the path), None if not one."""
    found = re.fullmatch(r"/model/([^/]+)/invoke-with-response-stream", urlsplit(path).path)
    if found is None or not isinstance(body, dict) or "model" in body:
        return None
    return "/v1/messages", {**body, "model": unquote(found.group(1)), "stream": True}


def event_stream_message(headers: dict[str, str], payload: bytes) -> bytes:
    """One message of AWS's event-stream encoding: prelude (lengths and their CRC), string headers, payload, CRC."""
    encoded = b"".join(
        bytes([len(k)]) + k.encode() + b"\x07" + len(v).to_bytes(2, "big") + v.encode() for k, v in headers.items()
    )
    total = 12 + len(encoded) + len(payload) + 4
    prelude = total.to_bytes(4, "big") + len(encoded).to_bytes(4, "big")
    message = prelude + zlib.crc32(prelude).to_bytes(4, "big") + encoded + payload
    return message + zlib.crc32(message).to_bytes(4, "big")


_AUTH = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/(?P<service>[^/]+)/aws4_request, "
    r"SignedHeaders=(?P<signed>[^,]+), Signature=(?P<signature>[0-9a-f]{64})"
)


def _sigv4_problem(url: str, headers: dict[str, str], raw: bytes, accept: tuple[str, str], region: str) -> str | None:
    """Why the request's SigV4 signature is not the one `accept`'s secret makes (None: it is), computed by
    botocore's own signer over the headers the request says it signed."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    found = _AUTH.fullmatch(headers.get("authorization", ""))
    if found is None:
        return "no SigV4 authorization"
    if (found["key"], found["region"], found["service"]) != (accept[0], region, "bedrock"):
        return f"signed by {found['key']} for {found['region']}/{found['service']}"
    signed = found["signed"].split(";")
    request = AWSRequest(method="POST", url=url, headers={h: headers[h] for h in signed if h in headers}, data=raw)
    request.context["timestamp"] = headers.get("x-amz-date", "")
    signer = SigV4Auth(Credentials(accept[0], accept[1], headers.get("x-amz-security-token")), "bedrock", region)
    expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
    return None if hmac.compare_digest(expected, found["signature"]) else "signature does not match"


# ---------------------------------------------------------------- Vertex


class FakeVertex(ProviderFake):
    def __init__(self, *args: Any, project: str, region: str, **kwargs: Any) -> None:
        from cryptography.hazmat.primitives.asymmetric import rsa

        super().__init__(*args, **kwargs)
        self.project, self.region = project, region
        self.client_email = f"agent@{project}.iam.gserviceaccount.com"
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)  # the service account's
        self.tokens_valid_for = 3600.0  # seconds each issued token is taken
        self.issued: dict[str, float] = {}  # token -> when it stops being taken
        self.tokens_used: list[str] = []

    def credentials(self) -> Json:
        """A service account's key file (what GOOGLE_APPLICATION_CREDENTIALS names) whose token endpoint is ours."""
        from cryptography.hazmat.primitives import serialization

        pem = self.key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()
        return {
            "type": "service_account", "project_id": self.project, "private_key_id": "fake-key-1",
            "private_key": pem, "client_email": self.client_email, "client_id": "1",
            "token_uri": f"{self.base_url}/token",
        }  # fmt: skip

    def check(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, Json] | Json | None:
        if urlsplit(path).path == "/token":
            return self._grant(parse_qs(raw.decode()))
        token = headers.get("authorization", "").removeprefix("Bearer ")
        with self.lock:
            self.tokens_used.append(token)
            valid = self.issued.get(token, 0.0) > time.monotonic()
        if not valid:
            return 401, {"error": {"code": 401, "message": "Request had invalid authentication credentials."}}
        body = json.loads(raw)
        if not VERTEX_VERSION.fullmatch(str(body.get("anthropic_version"))) or "model" in body:
            return 400, {"error": {"code": 400, "message": "the body needs anthropic_version, and no model"}}
        return None

    def _grant(self, form: dict[str, list[str]]) -> tuple[int, Json] | Json:
        """A service account's JWT-bearer grant, its assertion's RS256 signature checked with the account's key."""
        if form.get("grant_type") != ["urn:ietf:params:oauth:grant-type:jwt-bearer"]:
            return 400, {"error": "unsupported_grant_type"}
        if not self._signed(form.get("assertion", [""])[0]):
            return 400, {"error": "invalid_grant"}
        token = f"ya29.fake-{secrets.token_hex(8)}"
        with self.lock:
            self.issued[token] = time.monotonic() + self.tokens_valid_for
        return {"access_token": token, "expires_in": int(self.tokens_valid_for), "token_type": "Bearer"}

    def _signed(self, assertion: str) -> bool:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        def part(text: str) -> bytes:
            return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))

        try:
            header, payload, signature = assertion.split(".")
            self.key.public_key().verify(
                part(signature), f"{header}.{payload}".encode(), padding.PKCS1v15(), hashes.SHA256()
            )
        except (ValueError, InvalidSignature):
            return False
        return json.loads(part(payload)).get("iss") == self.client_email

    def expire_all(self) -> None:
        """Every token issued so far stops being taken (a token revoked or past its hour)."""
        with self.lock:
            self.issued = dict.fromkeys(self.issued, 0.0)

    def translate(self, path: str, body: Any) -> tuple[str, Any] | None:
        where = f"/v1/projects/{self.project}/locations/{self.region}/publishers/anthropic/models/"
        route = urlsplit(path).path
        model, _, verb = route.removeprefix(where).partition(":")
        if not route.startswith(where) or verb != "streamRawPredict" or not isinstance(body, dict):
            return None
        rest = {k: v for k, v in body.items() if k != "anthropic_version"}
        return "/v1/messages", {**rest, "model": unquote(model)}


# ---------------------------------------------------------------- Foundry and a gateway


class FakeFoundry(ProviderFake):
    """With `key`: the key in both headers. Without: Entra ID bearer tokens it issued itself, as an Azure managed
    identity endpoint does (`GET /msi/token`, App Service's protocol: IDENTITY_ENDPOINT and the secret
    IDENTITY_HEADER), for Claude Code's scope; `tokens_valid_for` seconds each."""

    def __init__(self, *args: Any, key: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.key = key
        self.identity_header = f"fake-identity-{secrets.token_hex(8)}"  # what IDENTITY_HEADER holds
        self.tokens_valid_for = 3600.0
        self.issued: dict[str, float] = {}  # token -> when it stops being taken (time.time())
        self.tokens_used: list[str] = []

    def identity_env(self) -> dict[str, str]:
        """The variables an App Service's managed identity sets, pointing at this fake."""
        return {"IDENTITY_ENDPOINT": f"{self.base_url}/msi/token", "IDENTITY_HEADER": self.identity_header}

    def get(self, path: str, headers: dict[str, str]) -> tuple[int, Json] | None:
        """A managed identity's token for the resource asked, when the identity header is right."""
        if urlsplit(path).path != "/msi/token":
            return None
        query = parse_qs(urlsplit(path).query)
        with self.lock:
            self.paths.append(urlsplit(path).path)
        if headers.get("x-identity-header") != self.identity_header:
            return 401, {"error": "invalid identity header"}
        if query.get("resource") != ["https://cognitiveservices.azure.com"]:
            return 400, {"error": "invalid_resource", "resource": query.get("resource")}
        token = f"eyJ0eXAiOiJKV1QifQ.fake-entra-{secrets.token_hex(8)}"
        expires = time.time() + self.tokens_valid_for
        with self.lock:
            self.issued[token] = expires
        return 200, {"access_token": token, "expires_on": str(int(expires)), "resource": query["resource"][0],
                     "token_type": "Bearer"}  # fmt: skip

    def expire_all(self) -> None:
        with self.lock:
            self.issued = dict.fromkeys(self.issued, 0.0)

    def check(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, Json] | Json | None:
        refused = 401, {"error": {"code": "401", "message": "Access denied due to invalid subscription key."}}
        if self.key is not None:
            ok = headers.get("x-api-key") == self.key and headers.get("api-key") == self.key
            return None if ok else refused
        token = headers.get("authorization", "").removeprefix("Bearer ")
        with self.lock:
            self.tokens_used.append(token)
            valid = self.issued.get(token, 0.0) > time.time()
        if not valid or "x-api-key" in headers:
            return 401, {"error": {"code": "401", "message": "The token is expired or invalid."}}
        return None

    def translate(self, path: str, body: Any) -> tuple[str, Any] | None:
        route = urlsplit(path).path
        return (route.removeprefix("/anthropic"), body) if route.startswith("/anthropic/v1/") else None


class FakeGateway(ProviderFake):
    def __init__(self, *args: Any, betas: frozenset[str] = frozenset(), keys: tuple[str, ...] = (), **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.betas = betas  # the anthropic-beta values it forwards; any other is refused
        self.keys = keys  # bearer keys it takes; empty: any

    def check(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, Json] | Json | None:
        key = headers.get("authorization", "").removeprefix("Bearer ")
        if self.keys and key not in self.keys:
            return 401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
        sent = {b.strip() for b in headers.get("anthropic-beta", "").split(",") if b.strip()}
        if sent - self.betas:
            return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": "invalid beta flag"}}
        return None
