// The management UI: sign in with the API token (kept in sessionStorage,
// sent only in the Authorization header) and watch the health report.
const TOKEN_KEY = 'eventstore.token';
const REFRESH_MS = 5000;

const $ = (id) => document.getElementById(id);
let timer;

function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

async function fetchHealth() {
  const response = await fetch('/api/v1/health', {
    headers: { Authorization: `Bearer ${token()}` },
    cache: 'no-store',
  });
  if (response.status === 401) {
    throw Object.assign(new Error('The token was not accepted.'), { unauthorized: true });
  }
  if (!response.ok && response.status !== 503) {
    throw new Error(`The health endpoint answered ${response.status}.`);
  }
  return response.json();
}

function formatValue(entry) {
  const unit = entry.observedUnit === 's' ? ' s' : entry.observedUnit ? ` ${entry.observedUnit}` : '';
  const value = typeof entry.observedValue === 'number' && !Number.isInteger(entry.observedValue)
    ? entry.observedValue.toFixed(1)
    : String(entry.observedValue);
  return value + unit;
}

function render(report) {
  const overall = $('overall');
  overall.textContent = report.status;
  overall.className = `badge ${report.status}`;
  $('output').hidden = !report.output;
  $('output').textContent = report.output || '';
  $('release').textContent = report.releaseId;
  $('service-id').textContent = report.serviceId;
  $('updated').textContent = new Date().toLocaleTimeString();
  const rows = Object.entries(report.checks).sort(([a], [b]) => a.localeCompare(b)).flatMap(([name, entries]) =>
    entries.map((entry) => {
      const row = document.createElement('tr');
      for (const text of [name, entry.status, formatValue(entry)]) {
        const cell = document.createElement('td');
        cell.textContent = text;
        row.append(cell);
      }
      return row;
    }));
  $('checks').replaceChildren(...rows);
}

async function refresh() {
  try {
    render(await fetchHealth());
    $('status-error').hidden = true;
  } catch (error) {
    if (error.unauthorized) {
      logout('The token was not accepted. Check it and sign in again.');
      return;
    }
    $('status-error').textContent = error.message;
    $('status-error').hidden = false;
  }
}

function showStatus() {
  $('login').hidden = true;
  $('status').hidden = false;
  $('logout').hidden = false;
  refresh();
  clearInterval(timer);
  timer = setInterval(refresh, REFRESH_MS);
}

function logout(message) {
  clearInterval(timer);
  sessionStorage.removeItem(TOKEN_KEY);
  $('status').hidden = true;
  $('logout').hidden = true;
  $('login').hidden = false;
  $('login-error').textContent = message || '';
  $('login-error').hidden = !message;
  $('token').focus();
}

$('login').addEventListener('submit', (event) => {
  event.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, $('token').value.trim());
  $('token').value = '';
  showStatus();
});
$('logout').addEventListener('click', () => logout());

if (token()) {
  showStatus();
} else {
  logout();
}
