// The management UI shell: sign-in with the API token (kept in
// sessionStorage, sent only in the Authorization header), hash routing
// between the views (focus moves to the view's heading), the menu that
// holds the navigation on narrow screens, and the views offered by what
// the token may do (read-access): the others are left out of the menu and
// named, with the grant they need.
import { request, getToken, setToken, clearToken, setUnauthorizedHandler, setForbiddenHandler, ApiError } from './api.js';
import * as access from './access.js';
import { $, showError, errorMessage, keepFocusInDialogs } from './dom.js';
import * as dashboard from './views/dashboard.js';
import * as subjects from './views/subjects.js';
import * as events from './views/events.js';
import * as live from './views/live.js';
import * as query from './views/query.js';
import * as types from './views/types.js';
import * as subscriptions from './views/subscriptions.js';
import * as operations from './views/operations.js';
import * as sampler from './sampler.js';

const REJECTED = 'The token was not accepted.';
const views = { dashboard, subjects, events, live, query, types, subscriptions, operations };
// The grants of which a view needs one (none: any token).
const NEEDS = {
  dashboard: [],
  subjects: ['read'],
  events: ['read'],
  live: ['read'],
  query: ['query'],
  types: ['read', 'schemas'],
  subscriptions: ['operate'],
  operations: ['operate'],
};
const DEFAULT_VIEW = 'dashboard';
let current = null;
let signedIn = false; // a token was signed in since the page loaded

for (const view of Object.values(views)) view.init();

function parseHash() {
  const hash = location.hash.replace(/^#\/?/, '');
  const q = hash.indexOf('?');
  const name = q < 0 ? hash : hash.slice(0, q);
  const params = new URLSearchParams(q < 0 ? '' : hash.slice(q + 1));
  return { name, params };
}

function leaveCurrent() {
  if (!current) return;
  try {
    views[current].leave();
  } catch (error) {
    console.warn('leaving view failed', error);
  }
  current = null;
}

const allowed = (name) => NEEDS[name].length === 0 || NEEDS[name].some((grant) => access.has(grant));
const title = (name) => $(`h-${name}`).textContent;
const label = (name) => $('nav-list').querySelector(`a[href="#/${name}"]`).textContent;
const needs = (name) => NEEDS[name].map((grant) => `“${grant}”`).join(' or ');
const expiry = (iso) => iso.replace('T', ' ').replace(/\.\d+/, '').replace('Z', ' UTC');

function route() {
  if (!getToken()) return;
  const { name, params } = parseHash();
  if (!views[name]) {
    location.replace(`#/${DEFAULT_VIEW}`);
    return;
  }
  leaveCurrent();
  const open = allowed(name);
  for (const key of Object.keys(views)) $(`view-${key}`).hidden = !open || key !== name;
  $('view-denied').hidden = open;
  for (const link of $('nav').querySelectorAll('a')) {
    if (link.getAttribute('href') === `#/${name}`) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  setMenu(false);
  $('nav-current').textContent = `: ${title(name)}`;
  if (!open) {
    $('h-denied').textContent = title(name);
    $('denied-text').textContent = `The token “${access.info().token}” may not use ${label(name)}: it needs the ${needs(name)} grant. `
      + 'Whoever keeps the service\'s access file can grant it.';
    $('h-denied').focus({ preventScroll: true });
    return;
  }
  current = name;
  $(`h-${name}`).focus({ preventScroll: true });
  Promise.resolve()
    .then(() => views[name].enter(params))
    .catch((error) => console.warn('view failed', error));
}

// Offers what the token may do: the menu holds the views it may use, and
// a token that may not do everything sees its name, grants and expiry and
// the views left out, with the grant each needs.
function applyAccess() {
  const { token, expires } = access.info();
  const hidden = [];
  for (const link of $('nav-list').querySelectorAll('a')) {
    const name = link.getAttribute('href').slice(2);
    link.parentElement.hidden = !allowed(name);
    if (!allowed(name)) hidden.push(`${label(name)} (needs ${needs(name)})`);
  }
  $('whoami').hidden = !token;
  $('whoami-name').textContent = token;
  const restricted = !access.has('admin') || expires !== null;
  $('access').hidden = !restricted;
  if (!restricted) return;
  $('access-grants').textContent = access.describe();
  $('access-expires').textContent = expires ? ` It expires at ${expiry(expires)}.` : '';
  $('access-hidden').textContent = hidden.length ? ` Not offered here, as the token lacks their grant: ${hidden.join(', ')}.` : '';
}

// Reads what the token may do, then shows the views: a failure to read it
// leaves every view offered (the server still checks every request).
async function showApp() {
  signedIn = true;
  $('login').hidden = true;
  $('login-error').hidden = true;
  try {
    await access.load();
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return; // back at the sign-in
    console.warn('reading the access failed', error);
  }
  applyAccess();
  $('app').hidden = false;
  $('logout').hidden = false;
  sampler.start();
  route();
}

function showLogin(message) {
  leaveCurrent();
  sampler.stop();
  clearToken();
  access.reset();
  $('whoami').hidden = true;
  $('app').hidden = true;
  $('logout').hidden = true;
  $('login').hidden = false;
  showError($('login-error'), message);
  $('token').focus();
}

setUnauthorizedHandler(() => {
  if (!getToken()) return;
  const { expires } = access.info();
  const expired = expires && Date.parse(expires) <= Date.now();
  showLogin(expired ? `The token expired at ${expiry(expires)}.` : REJECTED);
});

// A 403 for lack of a grant may mean the grants changed since they were
// read (the access file is reloaded while the service runs): read them
// again, offer the views anew, and leave a view no longer allowed.
let rereading = null;
setForbiddenHandler(() => {
  if (rereading || !getToken()) return;
  rereading = access.load()
    .then(() => {
      applyAccess();
      if (current && !allowed(current)) route();
    })
    .catch((error) => console.warn('reading the access failed', error))
    .finally(() => {
      rereading = null;
    });
});

$('login').addEventListener('submit', (event) => {
  event.preventDefault();
  const value = $('token').value.trim();
  const button = $('login-submit');
  button.disabled = true;
  request('/api/v1/verify-api-token', { method: 'POST', token: value })
    .then(() => {
      setToken(value);
      $('token').value = '';
      if (!parseHash().name || !views[parseHash().name]) location.replace(`#/${DEFAULT_VIEW}`);
      // The views keep what an earlier token read: a fresh page holds
      // nothing of it.
      if (signedIn) location.reload();
      else showApp();
    })
    .catch((error) => {
      const message = error instanceof ApiError && error.status === 401
        ? REJECTED
        : `Could not verify the token: ${errorMessage(error)}`;
      showError($('login-error'), message);
      $('token').select();
    })
    .finally(() => {
      button.disabled = false;
    });
});

function setMenu(open) {
  $('nav-toggle').setAttribute('aria-expanded', String(open));
  $('nav').classList.toggle('open', open);
}

$('nav-toggle').addEventListener('click', () => {
  const open = $('nav-toggle').getAttribute('aria-expanded') !== 'true';
  setMenu(open);
  if (open) $('nav-list').querySelector('a').focus();
});
$('nav').addEventListener('keydown', (event) => {
  if (event.key !== 'Escape' || !$('nav').classList.contains('open')) return;
  setMenu(false);
  $('nav-toggle').focus();
});
// A link to the view already shown changes no hash: close the menu and
// move the focus to the view's heading all the same.
$('nav-list').addEventListener('click', (event) => {
  setMenu(false);
  const link = event.target.closest('a');
  if (link && current && link.getAttribute('href') === `#/${current}`) {
    event.preventDefault();
    $(`h-${current}`).focus();
  }
});

// The skip link passes the header (and the menu) by: to the heading of
// the view shown, or to the sign-in.
$('skip-link').addEventListener('click', (event) => {
  event.preventDefault();
  let target = $('main');
  if (!$('login').hidden) target = $('token');
  else if (!$('app').hidden) target = $('app').querySelector('section.view:not([hidden]) h2') || target;
  target.focus();
  target.scrollIntoView({ block: 'nearest' });
});
keepFocusInDialogs();

$('logout').addEventListener('click', () => showLogin());
window.addEventListener('hashchange', route);
window.addEventListener('unhandledrejection', (event) => {
  console.warn('unhandled rejection', event.reason);
  event.preventDefault();
});

if (getToken()) showApp();
else showLogin();
