"""An MCP server behind OAuth, built on the official Python SDK's own
authorization server (`mcp.server.auth`: its metadata, `/authorize`,
`/token`, `/register` and `/revoke` handlers, PKCE and client checks), for
Warden's OAuth tests against code its authors did not write.

Only the storage is ours: an in-memory provider that approves every
authorization at once (the test's "person" always consents) and expires
access tokens after `ACCESS_SECS` (the first of two arguments; default
3600).

Serves Streamable HTTP on `127.0.0.1:<port>` at `/mcp`; the port is the
last argument. Tool `whoami` says which client and scopes the token
carries.
"""

import secrets
import sys
import time

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

ACCESS_SECS = int(sys.argv[1]) if len(sys.argv) > 2 else 3600


class MemoryProvider:
    def __init__(self):
        self.clients = {}
        self.codes = {}
        self.access = {}
        self.refresh = {}

    async def get_client(self, client_id):
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull):
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client, params: AuthorizationParams):
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or ["read"],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, authorization_code):
        return self.codes.get(authorization_code)

    def _issue(self, client_id, scopes, resource):
        access = secrets.token_urlsafe(24)
        refresh = secrets.token_urlsafe(24)
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=int(time.time()) + ACCESS_SECS, resource=resource
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(
            access_token=access, token_type="Bearer", expires_in=ACCESS_SECS, scope=" ".join(scopes), refresh_token=refresh
        )

    async def exchange_authorization_code(self, client, authorization_code):
        del self.codes[authorization_code.code]
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client, refresh_token):
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client, refresh_token, scopes):
        del self.refresh[refresh_token.token]  # rotation
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token):
        found = self.access.get(token)
        if found and found.expires_at and found.expires_at < time.time():
            return None
        return found

    async def revoke_token(self, token):
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


if __name__ == "__main__":
    port = int(sys.argv[-1])
    origin = f"http://127.0.0.1:{port}"
    server = MCPServer(
        "warden-python-oauth-server",
        auth_server_provider=MemoryProvider(),
        auth=AuthSettings(
            issuer_url=origin,
            resource_server_url=f"{origin}/mcp",
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=["read", "write"], default_scopes=["read"]
            ),
            revocation_options=RevocationOptions(enabled=True),
            required_scopes=["read"],
        ),
    )

    @server.tool()
    def whoami() -> str:
        """Says which client and scopes the token carries."""
        token = get_access_token()
        return f"client {token.client_id} with scopes {' '.join(token.scopes)}"

    server.run(transport="streamable-http", host="127.0.0.1", port=port, streamable_http_path="/mcp")
