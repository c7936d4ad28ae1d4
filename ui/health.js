// The health report (GET /api/v1/health, application/health+json): it
// answers 503 with the same report when a check fails.
import { request } from './api.js';

/** Reads the health report. */
export async function getHealth(options = {}) {
  const response = await request('/api/v1/health', { ...options, okStatuses: [503] });
  return response.json();
}

/** The first entry of a check of the report, or undefined. */
export function check(health, name) {
  const entries = (health.checks && health.checks[name]) || [];
  return entries[0];
}

/** The service's mode, from the check mode: read-only, read-write, or '' when not reported. */
export function mode(health) {
  const entry = check(health, 'mode');
  return entry ? String(entry.observedValue) : '';
}
