"""Drives a live Tocsin's OAuth 2.1 authorization server and /mcp with the official MCP Python
SDK's own OAuth client (pinned in scripts/ci-requirements.txt): `OAuthClientProvider` with a
`TokenStorage`, under the SDK's Streamable HTTP client. The SDK discovers the protected
resource and the authorization server from the 401, registers itself, and sends the person to
the authorize URL; the redirect handler plays the person's browser (a dashboard session signed
in through the real sign-in API, the documented consent POST), the callback handler hands the
code and state back, and the SDK exchanges them for tokens. Then initialize, tools/list and
tools/call on a monitor; a refresh forced through the SDK; and the old refresh token presented
again, which must revoke the grant: its access token stops working on /mcp and the grant leaves
`GET /mcp/grants`. Every step asserts; exits non-zero on any mismatch.

Usage: TOCSIN_URL=http://127.0.0.1:8080 TOCSIN_EMAIL=... TOCSIN_PASSWORD=... python oauth_check.py
"""

import asyncio
import os
import sys
import time
from urllib.parse import parse_qs, urlparse

import httpx2
from mcp import ClientSession
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

# A native app's loopback redirect (RFC 8252): any free port matches the registered one.
REDIRECT_URI = "http://127.0.0.1:47654/callback"


def check(cond, what, detail=None):
    if not cond:
        print(f"FAIL: {what}", "" if detail is None else detail, file=sys.stderr)
        sys.exit(1)
    print(f"ok: {what}")


def query_of(url):
    return {k: v[0] for k, v in parse_qs(urlparse(url).query).items()}


class MemoryStorage:
    """The SDK's `TokenStorage`, in memory; keeps every token set it was given."""

    def __init__(self):
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None
        self.history: list[OAuthToken] = []

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens
        self.history.append(tokens)

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


class Browser:
    """The person's browser: a dashboard session, the authorize redirect and the consent POST."""

    def __init__(self, base, email, password, storage):
        self.base = base
        self.email = email
        self.password = password
        self.storage = storage
        # Cookie writes must come from a page of this server.
        self.http = httpx2.AsyncClient(base_url=base, headers={"Origin": base}, timeout=30)
        self.result: AuthorizationCodeResult | None = None
        self.authorize_urls: list[str] = []

    async def sign_in(self):
        res = await self.http.post("/auth/sign-in/email", json={"email": self.email, "password": self.password})
        check(res.status_code == 200, "sign-in API answers 200", res.text)
        check(any(c for c in self.http.cookies.jar), "sign-in sets the session cookie")

    async def redirect_handler(self, authorization_url):
        self.authorize_urls.append(authorization_url)
        check(
            authorization_url.startswith(f"{self.base}/auth/oauth2/authorize?"),
            "the SDK sends the person to the discovered authorization endpoint",
            authorization_url,
        )
        q = query_of(authorization_url)
        client = self.storage.client_info
        check(client is not None and client.client_id.startswith("mcp_client_"), "the SDK registered a client first")
        check(q.get("client_id") == client.client_id, "authorize names the registered client", q)
        check(q.get("response_type") == "code", "authorize asks for a code", q)
        check(q.get("code_challenge_method") == "S256" and len(q.get("code_challenge", "")) == 43, "PKCE S256", q)
        check(q.get("redirect_uri") == REDIRECT_URI, "authorize names the registered redirect URI", q)
        check(q.get("resource") == f"{self.base}/mcp", "authorize names the resource (RFC 8707)", q)
        check("monitors:read" in q.get("scope", "").split(), "the SDK asks for the advertised scopes", q)

        # Without a session the server sends the person to sign in, and back here afterwards.
        async with httpx2.AsyncClient(timeout=30) as anonymous:
            res = await anonymous.get(authorization_url, follow_redirects=False)
        check(res.status_code == 302, "authorize without a session redirects", res.status_code)
        location = res.headers["location"]
        check(location.startswith("/app/sign-in?next="), "to the dashboard's sign-in page", location)
        check(query_of(location)["next"] == authorization_url[len(self.base) :], "which comes back to authorize")

        # Signed in: to the consent page, with the consent code.
        res = await self.http.get(authorization_url, follow_redirects=False)
        check(res.status_code == 302, "authorize with the session redirects", res.status_code)
        location = res.headers["location"]
        check(location.startswith("/app/oauth/consent?"), "to the dashboard's consent page", location)
        consent = query_of(location)
        check(consent.get("client_id") == client.client_id, "the consent page names the client", consent)
        check(consent.get("consent_code"), "the consent page carries a consent code", consent)

        # The documented consent POST, with the session cookie.
        res = await self.http.post(
            "/auth/oauth2/consent", json={"consent_code": consent["consent_code"], "accept": True}
        )
        check(res.status_code == 200, "consent POST answers 200", res.text)
        redirect = res.json()["redirectURI"]
        check(redirect.startswith(REDIRECT_URI + "?"), "consent answers the registered redirect URI", redirect)
        back = query_of(redirect)
        check(back.get("code") and back.get("state") == q["state"], "with a code and the client's state", back)
        self.result = AuthorizationCodeResult(code=back["code"], state=back["state"], iss=back.get("iss"))

    async def callback_handler(self):
        check(self.result is not None, "the callback has the code")
        result, self.result = self.result, None
        return result

    async def grants(self):
        res = await self.http.get("/mcp/grants")
        check(res.status_code == 200, "GET /mcp/grants answers 200", res.text)
        return res.json()


async def mcp_status(base, access_token):
    """The HTTP status /mcp answers a tools/list with this access token (none when empty)."""
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if access_token:
        headers["Authorization"] = f"Bearer {access_token}"
    async with httpx2.AsyncClient(timeout=30) as http:
        res = await http.post(
            f"{base}/mcp",
            headers=headers,
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/list",
                "params": {
                    "_meta": {
                        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientCapabilities": {},
                    }
                },
            },
        )
        return res.status_code, res.headers.get("www-authenticate", "")


async def main():
    base = os.environ["TOCSIN_URL"].rstrip("/")
    storage = MemoryStorage()
    browser = Browser(base, os.environ["TOCSIN_EMAIL"], os.environ["TOCSIN_PASSWORD"], storage)
    await browser.sign_in()

    # A monitor to read, made through the REST API with the dashboard session.
    res = await browser.http.post(
        "/monitors", json={"name": "oauth-sdk", "type": "HTTP", "url": "http://127.0.0.1:9/", "active": False}
    )
    check(res.status_code == 201, "a monitor to read", res.text)
    monitor = res.json()

    # Before any token: 401 with the protected resource metadata's address (RFC 9728).
    status, challenge = await mcp_status(base, "")
    check(status == 401, "/mcp without a token answers 401", status)
    check(
        f'resource_metadata="{base}/.well-known/oauth-protected-resource"' in challenge,
        "the 401 names the protected resource metadata",
        challenge,
    )

    provider = OAuthClientProvider(
        server_url=f"{base}/mcp",
        client_metadata=OAuthClientMetadata(
            client_name="tocsin-ci-python-sdk",
            redirect_uris=[REDIRECT_URI],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=browser.redirect_handler,
        callback_handler=browser.callback_handler,
    )
    http = create_mcp_http_client(auth=provider)
    async with http, streamable_http_client(f"{base}/mcp", http_client=http) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            # The first request meets the 401; the SDK runs discovery, registration, authorize
            # and the token exchange, then sends it again with the access token.
            init = await session.initialize()
            check(init.server_info.name == "tocsin", "initialize: server is tocsin", init)
            check(len(browser.authorize_urls) == 1, "one authorization", browser.authorize_urls)
            meta = provider.context.oauth_metadata
            check(meta is not None and str(meta.issuer).rstrip("/") == f"{base}/auth", "discovered the issuer", meta)
            prm = provider.context.protected_resource_metadata
            check(prm is not None and str(prm.resource).rstrip("/") == f"{base}/mcp", "discovered the resource", prm)
            first = storage.tokens
            check(first is not None and first.access_token.startswith("mcp_at_"), "token: an access token", first)
            check(first.refresh_token and first.refresh_token.startswith("mcp_rt_"), "token: a refresh token")
            check(first.token_type.lower() == "bearer" and first.expires_in, "token: bearer, with a lifetime", first)
            check("monitors:read" in (first.scope or "").split(), "token: monitors:read granted", first.scope)

            listed = await session.list_tools()
            tools = {t.name for t in listed.tools}
            check({"get_monitor", "list_monitors"} <= tools and len(tools) >= 30, f"tools/list: {len(tools)} tools")

            got = await session.call_tool("get_monitor", {"monitorId": monitor["id"]})
            check(
                got.is_error is False and got.structured_content["id"] == monitor["id"],
                "tools/call get_monitor with the OAuth access token",
                got,
            )
            page = await session.call_tool("list_monitors", {})
            ids = [m["id"] for m in page.structured_content["monitors"]]
            check(page.is_error is False and monitor["id"] in ids, "tools/call list_monitors", page)

            grants = await browser.grants()
            mine = [g for g in grants if g["clientId"] == storage.client_info.client_id]
            check(len(mine) == 1, "GET /mcp/grants lists the client's grant", grants)
            grant_id = mine[0]["id"]

            # Forced refresh, through the SDK: the access token is taken as expired, so the
            # provider refreshes before its next request.
            provider.context.token_expiry_time = time.time() - 1
            again = await session.call_tool("get_monitor", {"monitorId": monitor["id"]})
            check(again.is_error is False, "tools/call after the SDK refreshed", again)
            second = storage.tokens
            check(len(storage.history) == 2, "the SDK refreshed once", len(storage.history))
            check(second.access_token != first.access_token, "refresh: a new access token")
            check(second.refresh_token and second.refresh_token != first.refresh_token, "refresh: rotated")
            check(len(browser.authorize_urls) == 1, "refresh needed no new authorization")

    # The old refresh token again: refused, and the whole grant is revoked.
    async with httpx2.AsyncClient(timeout=30) as plain:
        token_endpoint = str(provider.context.oauth_metadata.token_endpoint)
        res = await plain.post(
            token_endpoint,
            data={
                "grant_type": "refresh_token",
                "refresh_token": first.refresh_token,
                "client_id": storage.client_info.client_id,
            },
        )
        check(res.status_code == 400 and res.json().get("error") == "invalid_grant", "reuse is refused", res.text)
        res = await plain.post(
            token_endpoint,
            data={
                "grant_type": "refresh_token",
                "refresh_token": second.refresh_token,
                "client_id": storage.client_info.client_id,
            },
        )
        check(res.status_code == 400, "the grant's current refresh token is dead too", res.text)

    status, challenge = await mcp_status(base, second.access_token)
    check(status == 401, "the grant's access token is refused on /mcp", status)
    check("resource_metadata=" in challenge, "with the OAuth challenge", challenge)
    grants = await browser.grants()
    check(all(g["id"] != grant_id for g in grants), "GET /mcp/grants no longer lists the grant", grants)

    await browser.http.aclose()
    print("python sdk oauth: all checks passed")


asyncio.run(main())
