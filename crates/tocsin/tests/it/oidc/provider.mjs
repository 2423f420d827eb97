// A real OpenID provider for Tocsin's single sign-on tests: panva's certified `oidc-provider`
// on a loopback port, with one confidential client. A request that names who signs in is
// answered without a form; one that does not gets the provider's own small login page.
//
// Started by the Rust test harness (`tests/it/sso.rs`) and by the dashboard's browser test
// (`web/tests/sso.spec.ts`); prints `READY <issuer>` once it listens.
// Environment: OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, OIDC_AUTH_METHOD (client_secret_basic or
// client_secret_post), OIDC_PORT (0 for any).
//
// Who signs in is the authorization request's `login_hint`, at once (the Rust tests' cookie-
// keeping client follows redirects and fills in no form); the hint `cancel` answers
// `access_denied`, as a person cancelling would. Without a hint, `GET /interaction/<uid>` is an
// HTML page with a "Username" field and a "Sign in" button, posting to
// `/interaction/<uid>/login`, which signs that username in (a browser test types it, as a
// person at a real provider would). Accounts are `<sub>` with
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

async function text(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  return Buffer.concat(chunks).toString('utf8');
}

async function body(req) {
  const t = await text(req);
  return t ? JSON.parse(t) : {};
}

function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}

// The provider's own login page: plain HTML with its own look, so a browser test can tell it
// is at the provider and not at Tocsin.
function loginPage(uid, problem) {
  const action = `/interaction/${encodeURIComponent(uid)}/login`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Test identity provider: sign in</title>
<style>
  body { font-family: system-ui, sans-serif; background: #eef1f5; color: #1b1f24; margin: 0; }
  main { max-width: 22rem; margin: 4rem auto; padding: 1.5rem; background: #fff; border: 1px solid #c5ccd6; border-radius: 8px; }
  h1 { font-size: 1.25rem; margin-top: 0; }
  label { display: block; font-weight: 600; margin-bottom: .3rem; }
  input { width: 100%; box-sizing: border-box; padding: .45rem .55rem; border: 1px solid #8a94a3; border-radius: 6px; font: inherit; }
  button { margin-top: 1rem; padding: .45rem 1rem; border: 0; border-radius: 6px; background: #1a4d8f; color: #fff; font: inherit; cursor: pointer; }
  .problem { color: #a1251b; }
</style>
</head>
<body>
<main>
<h1>Test identity provider</h1>
<p>Sign in to continue to the application that sent you here.</p>
${problem ? `<p class="problem" role="alert">${escapeHtml(problem)}</p>` : ''}
<form method="post" action="${escapeHtml(action)}">
<label for="username">Username</label>
<input id="username" name="username" autocomplete="username" required autofocus>
<button type="submit">Sign in</button>
</form>
</main>
</body>
</html>
`;
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
    const login = url.pathname.match(/^\/interaction\/([^/]+)\/login$/);
    if (req.method === 'POST' && login) {
      // The interaction cookie (path `/interaction/<uid>`) says which sign-in this finishes.
      await provider.interactionDetails(req, res);
      const username = (new URLSearchParams(await text(req)).get('username') || '').trim();
      if (!username) {
        res.writeHead(400, { 'content-type': 'text/html; charset=utf-8' }).end(loginPage(decodeURIComponent(login[1]), 'Type a username.'));
        return;
      }
      await provider.interactionFinished(req, res, { login: { accountId: username } }, { mergeWithLastSubmission: false });
      return;
    }
    if (req.method === 'GET' && url.pathname.startsWith('/interaction/')) {
      const details = await provider.interactionDetails(req, res);
      const hint = details.params.login_hint;
      if (!hint) {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(loginPage(details.uid));
        return;
      }
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
