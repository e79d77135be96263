// A real OAuth 2.1 / OpenID Connect authorization server for the tests: the certified `oidc-provider`
// (installed by tests/services/oidc_server.py into .cache/oidc-provider), on 127.0.0.1 at a port the OS
// picks. Usage: node provider.mjs <oidc-provider package dir>. Prints "OIDC ready at <issuer>"; the
// issuer has no trailing slash. Errors go to stderr.
//
// What the tests need of it: dynamic client registration (open, RFC 7591), authorization code + PKCE
// (S256), refresh tokens, client credentials, RFC 8707 resource indicators giving RS256 JWT access
// tokens (RFC 9068: iss, sub, aud, client_id, scope, exp, iat, jti) whose aud is the requested resource
// and whose scope is the granted part of "read write admin", and a login and consent a test can script
// (plain HTML forms, also driven by Chromium):
//   GET  /interaction/:uid          login form (input name=login, button id=submit) or consent form
//                                   (button id=consent, input name=grant_scopes: empty grants what is
//                                   asked; "read" grants read only, for step-up tests)
//   POST /interaction/:uid/login    POST /interaction/:uid/consent
// Device authorization grant (RFC 8628): POST /device/auth; the user's pages are plain HTML forms too:
//   GET  /device?user_code=...      confirm form (form id=op.deviceConfirmForm: hidden xsrf, user_code,
//                                   confirm=yes; button id=confirm) or, without a code, the input form
//                                   (form id=op.deviceInputForm: xsrf, user_code); POST /device either;
//                                   then the login and consent above, ending at a page with id=signed-in.
// $OIDC_ACCESS_TTL: access tokens' lifetime in seconds (default 600), short for a token that expires
// mid-session.
// Any login name is an account. Resources: any http://127.0.0.1:* or http://localhost:* URL, and those
// in $OIDC_RESOURCES (space-separated); $OIDC_DEFAULT_RESOURCE is used when a request names none.
// Clients whose client_name starts with "opaque" get opaque access tokens, for RFC 7662 introspection.
//
// Facts about oidc-provider worth knowing:
// - `scopes` must list read, write and admin, or registration of a client asking for them fails.
// - A client that registered a `scope` is capped at it: later requests for more fail with invalid_scope.
//   The MCP SDK registers with the scope of its first challenge, so that would forbid step-up (read,
//   then write). Hence the registered scope of clients that sign users in (authorization code or device
//   grant) is dropped here (what they get is what the user consents to); client-credentials-only clients
//   keep theirs as their ceiling.
// - offline_access is dropped from a request without prompt=consent (the SDK sends prompt=consent when
//   it asks for offline_access, which it does because the metadata lists it). Refresh tokens are issued
//   to every client allowed the refresh_token grant, with or without offline_access.
// - Cookies are not `secure` over plain http, so sessions work on 127.0.0.1.
// - The signing key gets a random kid at every start (a JWKS cache keyed by kid sees a new key).
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const packageDir = process.argv[2];
const { default: Provider, errors } = await import(pathToFileURL(path.join(packageDir, 'lib', 'index.js')).href);

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: randomBytes(8).toString('hex'), use: 'sig', alg: 'RS256' };
const RESOURCE_SCOPES = ['read', 'write', 'admin'];
const EXTRA_RESOURCES = new Set((process.env.OIDC_RESOURCES ?? '').split(/\s+/).filter(Boolean));
const DEFAULT_RESOURCE = process.env.OIDC_DEFAULT_RESOURCE || undefined;
const ACCESS_TTL = Number(process.env.OIDC_ACCESS_TTL || 600);
const LOCAL = /^http:\/\/(127\.0\.0\.1|localhost)(:\d+)?(\/|$)/;

const server = http.createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    jwks: { keys: [signingKey] },
    scopes: ['openid', 'offline_access', ...RESOURCE_SCOPES],
    findAccount: async (_ctx, id) => ({
      accountId: id,
      claims: async () => ({ sub: id, name: id, email: `${id}@example.test` }),
    }),
    cookies: { keys: [randomBytes(16).toString('hex')] },
    pkce: { required: () => true },
    // A refresh token for every client allowed the grant, whether or not offline_access was granted.
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    ttl: { AccessToken: ACCESS_TTL, DeviceCode: 600, ClientCredentials: 600, RefreshToken: 86400, AuthorizationCode: 120, Grant: 86400, Session: 3600, Interaction: 600, IdToken: 600 },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      deviceFlow: {
        enabled: true,
        userCodeInputSource: async (ctx, form, _out, err) => {
          ctx.body = `<!doctype html><title>Enter the code</title><h1>Enter the code</h1>
${err ? `<p id="error">${err.name}</p>` : ''}${form}<button id="continue" type="submit" form="op.deviceInputForm">Continue</button>`;
        },
        userCodeConfirmSource: async (ctx, form, _client, _device, userCode) => {
          ctx.body = `<!doctype html><title>Confirm</title><h1>Confirm the code</h1><p id="user_code">${userCode}</p>
${form}<button id="confirm" type="submit" form="op.deviceConfirmForm">Continue</button>
<button id="abort" type="submit" form="op.deviceConfirmForm" name="abort" value="yes">Abort</button>`;
        },
        successSource: async (ctx) => {
          ctx.body = '<!doctype html><title>Signed in</title><h1 id="signed-in">Signed in</h1>';
        },
      },
      resourceIndicators: {
        enabled: true,
        // The resource of the request when there is one (then this is not asked), else the granted one.
        defaultResource: (_ctx, _client, oneOf) => oneOf ?? DEFAULT_RESOURCE,
        useGrantedResource: () => true,
        // JWT access tokens, but opaque ones (for introspection) to clients named "opaque ...".
        getResourceServerInfo: (_ctx, resource, client) => {
          if (!LOCAL.test(resource) && !EXTRA_RESOURCES.has(resource) && resource !== DEFAULT_RESOURCE) {
            throw new errors.InvalidTarget(`unknown resource ${resource}`);
          }
          return {
            scope: RESOURCE_SCOPES.join(' '),
            audience: resource,
            accessTokenTTL: ACCESS_TTL,
            ...(client?.clientName?.startsWith('opaque')
              ? { accessTokenFormat: 'opaque' }
              : { accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } }),
          };
        },
      },
    },
  });
  for (const event of ['server_error', 'authorization.error', 'grant.error', 'device_authorization.error', 'code_verification.error', 'device_resume.error', 'registration_create.error', 'introspection.error']) {
    provider.on(event, (_ctx, error) => console.error(`${event}: ${error.message} ${error.error_description ?? ''}`));
  }

  const callback = provider.callback();
  server.on('request', async (req, res) => {
    try {
      if (req.url.startsWith('/interaction/')) {
        await interaction(provider, req, res);
        return;
      }
      if (req.method === 'POST' && req.url.split('?')[0] === '/reg') {
        await uncapRegisteredScope(req);
      }
      callback(req, res);
    } catch (error) {
      console.error(error);
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'text/plain' });
      }
      res.end(String(error));
    }
  });
  console.log(`OIDC ready at ${issuer}`);
});

async function uncapRegisteredScope(req) {
  // oidc-provider accepts a body read upstream (req.body, once the stream is consumed).
  const raw = await body(req);
  let metadata;
  try {
    metadata = JSON.parse(raw);
  } catch {
    req.body = raw; // let the provider answer the malformed request itself
    return;
  }
  const grantTypes = metadata?.grant_types ?? ['authorization_code'];
  const signsInUsers = ['authorization_code', 'urn:ietf:params:oauth:grant-type:device_code'];
  if (Array.isArray(grantTypes) && grantTypes.some((grant) => signsInUsers.includes(grant))) {
    delete metadata.scope;
  }
  req.body = JSON.stringify(metadata);
}

async function interaction(provider, req, res) {
  const details = await provider.interactionDetails(req, res);
  const { uid, prompt, params, session, grantId } = details;
  if (req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    if (prompt.name === 'login') {
      res.end(`<!doctype html><title>Sign in</title><h1>Sign in</h1>
<form method="post" action="/interaction/${uid}/login"><input id="login" name="login" autofocus>
<button id="submit" type="submit">Sign in</button></form>`);
    } else {
      const asked = Object.values(prompt.details.missingResourceScopes ?? {}).flat().join(' ');
      res.end(`<!doctype html><title>Consent</title><h1>Allow ${params.client_id}</h1><p id="asked">${asked}</p>
<form method="post" action="/interaction/${uid}/consent"><input id="grant_scopes" name="grant_scopes" value="">
<button id="consent" type="submit">Allow</button></form>`);
    }
    return;
  }
  const form = new URLSearchParams(await body(req));
  if (req.url.endsWith('/login')) {
    const login = form.get('login') || 'anonymous';
    await provider.interactionFinished(req, res, { login: { accountId: login } }, { mergeWithLastSubmission: false });
    return;
  }
  const only = (form.get('grant_scopes') || '').split(' ').filter(Boolean);
  const grant = grantId
    ? await provider.Grant.find(grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  const missing = prompt.details;
  if (missing.missingOIDCScope) {
    grant.addOIDCScope(missing.missingOIDCScope.join(' '));
  }
  for (const [resource, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
    const granted = scopes.filter((s) => only.length === 0 || only.includes(s));
    grant.addResourceScope(resource, granted.join(' '));
    // Declined, not pending: without this the provider asks for consent again and again.
    const declined = scopes.filter((s) => !granted.includes(s));
    if (declined.length) grant.rejectResourceScope(resource, declined.join(' '));
  }
  await provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } }, { mergeWithLastSubmission: true });
}

function body(req) {
  return new Promise((resolve, reject) => {
    let data = '';
    req.on('data', (chunk) => { data += chunk; });
    req.on('end', () => resolve(data));
    req.on('error', reject);
  });
}
