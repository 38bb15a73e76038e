// The authorization server of the OAuth e2e tests: panva's oidc-provider (a maintained,
// certified implementation), configured as an MCP server's authorization server would be.
//
// - open dynamic client registration (RFC 7591), PKCE S256 required for every client;
// - RFC 8707 resource indicators: the resources are the MCP servers' URLs (RESOURCE, commas
//   between several; the first is the default), their access tokens JWTs (RFC 9068) for that
//   audience, with a short lifetime (--ttl seconds);
// - refresh tokens for every client allowed the grant, rotated on each use (a refresh token
//   used twice revokes the whole grant, as OAuth 2.1 §4.3.1 allows);
// - token revocation (RFC 7009);
// - device authorization (RFC 8628), whose pages peers/device_user.py fills in;
// - the client credentials grant for one pre-registered service client (SERVICE below);
// - the user's login and consent approved at once, on a GET of the interaction page, so a
//   browser that only follows redirects (peers/follow_redirects.py) completes the sign-in;
//   the user is the account the authorization request's `login_hint` names, else "e2e-user";
// - token introspection (RFC 7662), for the service client; with FORMAT "opaque" the access
//   tokens are opaque (only introspection says what they are), else JWTs;
// - its signing keys the private JWKS in the file JWKS_FILE when given (a test then signs
//   tokens of its own with them: expired, of another audience...), else made at start.
//
// Every grant and error is printed on stdout as one JSON line, for the test to count.
//
// Usage: node oauth_server.mjs PORT RESOURCE TTL [JWKS_FILE [FORMAT]]

import fs from 'node:fs';
import http from 'node:http';
import Provider, { errors } from 'oidc-provider';

const [port, resourceList, ttl, jwksFile, format = 'jwt'] = process.argv.slice(2);
const resources = resourceList.split(',');
const issuer = `http://127.0.0.1:${port}`;
const scope = 'mcp';
const SERVICE = {
  client_id: 'e2e-service',
  client_secret: 'e2e-service-secret',
  grant_types: ['client_credentials'],
  redirect_uris: [],
  response_types: [],
};

function log(event, fields = {}) {
  process.stdout.write(`${JSON.stringify({ event, ...fields })}\n`);
}

const provider = new Provider(issuer, {
  ...(jwksFile ? { jwks: JSON.parse(fs.readFileSync(jwksFile, 'utf8')) } : {}),
  clients: [SERVICE],
  scopes: ['openid', 'offline_access', scope],
  cookies: { keys: ['e2e-only-cookie-key'] },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    deviceFlow: { enabled: true },
    registration: { enabled: true },
    revocation: { enabled: true },
    introspection: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resources[0],
      useGrantedResource: () => true,
      getResourceServerInfo(ctx, indicator) {
        if (!resources.includes(indicator)) throw new errors.InvalidTarget();
        return {
          scope, audience: indicator, accessTokenTTL: Number(ttl), accessTokenFormat: format,
        };
      },
    },
  },
  pkce: { required: () => true },
  rotateRefreshToken: true,
  issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
  ttl: { AccessToken: Number(ttl), RefreshToken: 3600, Grant: 3600, Session: 3600, Interaction: 600 },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  findAccount: async (ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
});

// The user: signed in as "e2e-user", consenting to whatever the client asked.
async function approve(ctx) {
  const details = await provider.interactionDetails(ctx.req, ctx.res);
  const { prompt, params, session } = details;
  if (prompt.name === 'login') {
    return { login: { accountId: params.login_hint || 'e2e-user' } };
  }
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  const missing = prompt.details;
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
  if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, scopes.join(' '));
  }
  return { consent: { grantId: await grant.save() } };
}

provider.use(async (ctx, next) => {
  if (ctx.method === 'GET' && ctx.path.startsWith('/interaction/')) {
    const result = await approve(ctx);
    await provider.interactionFinished(ctx.req, ctx.res, result, { mergeWithLastSubmission: false });
    return undefined;
  }
  return next();
});

provider.on('registration_create.success', (ctx, client) => log('registered', { client: client.clientId }));
provider.on('grant.success', (ctx) => log('granted', { grant_type: ctx.oidc.params.grant_type }));
provider.on('grant.error', (ctx, err) => log('grant_error', { error: err.error, detail: err.error_description }));
provider.on('grant.revoked', () => log('revoked'));
provider.on('introspection.error', (ctx, err) => log('introspection_error', { error: err.error, detail: err.error_description }));
provider.on('authorization.error', (ctx, err) => log('authorization_error', { error: err.error, detail: err.error_description }));
provider.on('registration_create.error', (ctx, err) => log('registration_error', { error: err.error, detail: err.error_description }));
provider.on('server_error', (ctx, err) => log('server_error', { error: String(err) }));

http.createServer(provider.callback()).listen(Number(port), '127.0.0.1', () => log('listening', { issuer }));
