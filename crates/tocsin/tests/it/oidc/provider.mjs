// A real OpenID provider for Tocsin's single sign-on tests: panva's certified `oidc-provider`
// on a loopback port, with one confidential client and people signed in without a form.
//
// Started by the Rust test harness (`tests/it/sso.rs`); prints `READY <issuer>` once it listens.
// Environment: OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, OIDC_AUTH_METHOD (client_secret_basic or
// client_secret_post), OIDC_PORT (0 for any).
//
// Who signs in is the authorization request's `login_hint` (default `alice`); the hint
// `cancel` answers `access_denied`, as a person cancelling would. Accounts are `<sub>` with
// `<sub>@example.test`, verified, unless set with `PUT /admin/accounts/<sub>` (JSON claims).
// `POST /admin/rotate` replaces the signing key (the old one is no longer published).
// `POST /admin/tamper` (JSON `{"aud": "...", "expired": true, "foreignKey": true}`) makes the
// token endpoint hand out ID tokens re-signed with those changes, until `{}` is posted.

import http from 'node:http';
import Provider from 'oidc-provider';
import * as jose from 'jose';

const clientId = process.env.OIDC_CLIENT_ID || 'tocsin';
const clientSecret = process.env.OIDC_CLIENT_SECRET || 'tocsin-secret';
const authMethod = process.env.OIDC_AUTH_METHOD || 'client_secret_basic';
const port = Number(process.env.OIDC_PORT || 0);

// The harness may stop reading standard output after READY: notices go to standard error,
// and a closed pipe is no reason to stop.
console.info = console.error;
process.stdout.on('error', () => {});

const accounts = new Map();
let tamper = {};
let generation = 0;
let signing; // { jwk (private), kid }
let handler;

async function newSigningKey() {
  generation += 1;
  const kid = `key-${generation}`;
  const { privateKey } = await jose.generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await jose.exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' };
  return { jwk, kid };
}

function account(sub) {
  const claims = accounts.get(sub) || {
    email: `${sub}@example.test`,
    email_verified: true,
    name: sub,
  };
  return { accountId: sub, claims: async () => ({ sub, ...claims }) };
}

function build(issuer) {
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: ['http://127.0.0.1/auth/sso/placeholder/callback'],
        token_endpoint_auth_method: authMethod,
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    jwks: { keys: [signing.jwk] },
    findAccount: async (_ctx, sub) => account(sub),
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    // Discovery advertises the one method the client is registered with, so the relying
    // party must pick it from there.
    clientAuthMethods: [authMethod],
    pkce: { required: () => true },
    cookies: { keys: ['tocsin-test-cookies'] },
    // No consent screen: the client is granted what it asks for.
    loadExistingGrant: async (ctx) => {
      const grantId = ctx.oidc.result?.consent?.grantId
        || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
      if (grantId) return ctx.oidc.provider.Grant.find(grantId);
      const grant = new ctx.oidc.provider.Grant({
        clientId: ctx.oidc.client.clientId,
        accountId: ctx.oidc.session.accountId,
      });
      grant.addOIDCScope(ctx.oidc.requestParamScopes ? [...ctx.oidc.requestParamScopes].join(' ') : 'openid email profile');
      await grant.save();
      return grant;
    },
  });
  // The relying parties under test listen on ports chosen at start: any loopback callback.
  provider.Client.prototype.redirectUriAllowed = (uri) => /^http:\/\/127\.0\.0\.1:\d+\/auth\/sso\/[a-z0-9-]+\/callback$/.test(uri);
  provider.use(async (ctx, next) => {
    await next();
    if (ctx.path === '/token' && ctx.body && ctx.body.id_token && Object.keys(tamper).length) {
      ctx.body = { ...ctx.body, id_token: await retamper(ctx.body.id_token) };
    }
  });
  return provider;
}

async function retamper(idToken) {
  const claims = jose.decodeJwt(idToken);
  if (tamper.aud) claims.aud = tamper.aud;
  if (tamper.expired) {
    const now = Math.floor(Date.now() / 1000);
    claims.iat = now - 7200;
    claims.exp = now - 3600;
  }
  let key;
  if (tamper.foreignKey) {
    key = (await jose.generateKeyPair('RS256')).privateKey;
  } else {
    key = await jose.importJWK(signing.jwk, 'RS256');
  }
  return new jose.SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: signing.kid }).sign(key);
}

async function body(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? JSON.parse(text) : {};
}

let provider;
const server = http.createServer(async (req, res) => {
  try {
    const url = new URL(req.url, 'http://127.0.0.1');
    if (req.method === 'POST' && url.pathname === '/admin/rotate') {
      signing = await newSigningKey();
      provider = build(provider.issuer);
      handler = provider.callback();
      res.writeHead(204).end();
      return;
    }
    if (req.method === 'POST' && url.pathname === '/admin/tamper') {
      tamper = await body(req);
      res.writeHead(204).end();
      return;
    }
    if (req.method === 'PUT' && url.pathname.startsWith('/admin/accounts/')) {
      accounts.set(decodeURIComponent(url.pathname.slice('/admin/accounts/'.length)), await body(req));
      res.writeHead(204).end();
      return;
    }
    if (req.method === 'GET' && url.pathname.startsWith('/interaction/')) {
      const details = await provider.interactionDetails(req, res);
      const hint = details.params.login_hint || 'alice';
      const result = hint === 'cancel'
        ? { error: 'access_denied', error_description: 'The person cancelled the sign-in' }
        : { login: { accountId: hint } };
      await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
      return;
    }
    handler(req, res);
  } catch (e) {
    res.writeHead(500, { 'content-type': 'text/plain' }).end(String(e && e.stack || e));
  }
});

signing = await newSigningKey();
server.listen(port, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  provider = build(issuer);
  handler = provider.callback();
  process.stdout.write(`READY ${issuer}\n`);
});
