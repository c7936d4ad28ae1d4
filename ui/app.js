// The management UI shell: sign-in with the API token (kept in
// sessionStorage, sent only in the Authorization header), hash routing
// between the views (focus moves to the view's heading), and the menu that
// holds the navigation on narrow screens.
import { request, getToken, setToken, clearToken, setUnauthorizedHandler, ApiError } from './api.js';
import { $, showError, errorMessage } from './dom.js';
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
const DEFAULT_VIEW = 'dashboard';
let current = null;

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

function route() {
  if (!getToken()) return;
  const { name, params } = parseHash();
  if (!views[name]) {
    location.replace(`#/${DEFAULT_VIEW}`);
    return;
  }
  leaveCurrent();
  for (const key of Object.keys(views)) $(`view-${key}`).hidden = key !== name;
  for (const link of $('nav').querySelectorAll('a')) {
    if (link.getAttribute('href') === `#/${name}`) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  current = name;
  setMenu(false);
  $('nav-current').textContent = `: ${$(`h-${name}`).textContent}`;
  $(`h-${name}`).focus({ preventScroll: true });
  Promise.resolve()
    .then(() => views[name].enter(params))
    .catch((error) => console.warn('view failed', error));
}

function showApp() {
  $('login').hidden = true;
  $('login-error').hidden = true;
  $('app').hidden = false;
  $('logout').hidden = false;
  sampler.start();
  route();
}

function showLogin(message) {
  leaveCurrent();
  sampler.stop();
  clearToken();
  $('app').hidden = true;
  $('logout').hidden = true;
  $('login').hidden = false;
  showError($('login-error'), message);
  $('token').focus();
}

setUnauthorizedHandler(() => {
  if (getToken()) showLogin(REJECTED);
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
      showApp();
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

$('logout').addEventListener('click', () => showLogin());
window.addEventListener('hashchange', route);
window.addEventListener('unhandledrejection', (event) => {
  console.warn('unhandled rejection', event.reason);
  event.preventDefault();
});

if (getToken()) showApp();
else showLogin();
