// What the signed-in token may do: its name, grants and expiry as
// POST /api/v1/read-access answers them (docs/api.md §1.2a). The console
// offers only the views and actions the grants allow and says why the
// others are missing; the server checks every request all the same.
import { request } from './api.js';

const ALL = { token: '', grants: { admin: true }, expires: null };
let current = ALL;

/** Reads the token's access (token: an override, as at sign-in). */
export async function load(options = {}) {
  const response = await request('/api/v1/read-access', { ...options, method: 'POST' });
  const body = await response.json();
  current = { token: String(body.token || ''), grants: body.grants || {}, expires: body.expires || null };
  return current;
}

/** Forgets the access read last (at sign-out). */
export function reset() {
  current = ALL;
}

/** The token's name, grants and expiry (an ISO time or null). */
export function info() {
  return current;
}

const list = (name) => (Array.isArray(current.grants[name]) ? current.grants[name] : []);

/**
 * Whether the token holds grant: 'read', 'write' and 'consume' need at
 * least one prefix or name, the others to be true; admin holds them all.
 */
export function has(grant) {
  const g = current.grants;
  if (g.admin) return true;
  if (grant === 'read' || grant === 'write' || grant === 'consume') return list(grant).length > 0;
  return g[grant] === true;
}

/** Whether subject lies under one of the token's read prefixes. */
export function mayRead(subject) {
  return current.grants.admin === true || list('read').some((prefix) => under(subject, prefix));
}

/** The read prefixes, or ['/'] for a token that may read everything. */
export function readPrefixes() {
  return current.grants.admin ? ['/'] : list('read');
}

/**
 * The subject a view starts from: subject if the token may read it,
 * else the first read prefix.
 */
export function startSubject(subject = '/') {
  if (mayRead(subject)) return subject;
  return readPrefixes()[0] || subject;
}

/** The grants as words: "admin", or "read /orders, /invoices; query". */
export function describe() {
  const g = current.grants;
  if (g.admin) return 'admin (everything)';
  const parts = [];
  for (const name of ['read', 'write', 'consume']) if (list(name).length) parts.push(`${name} ${list(name).join(', ')}`);
  for (const name of ['query', 'schemas', 'operate', 'metrics']) if (g[name] === true) parts.push(name);
  return parts.join('; ') || 'nothing but health';
}

function under(subject, prefix) {
  if (prefix === '/' || subject === prefix) return true;
  return subject.startsWith(`${prefix}/`);
}
