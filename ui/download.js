// Downloads of any size (docs/api.md §4.12a): the page asks the
// server for a single-use ticket for one request of a route (a backup, a
// query), and the browser fetches the ticket's URL as a file, streaming it
// to disk; the page never holds the answer. The server records what it
// sent, and how the download ended; the page follows that record and says
// it in words, since it cannot see the browser's download itself.
import { postJSON } from './api.js';

const POLL_MS = 400;
const ENDED = new Set(['done', 'failed', 'cancelled', 'expired']);

// Whether a download status is final.
function ended(status) {
  return ENDED.has(status.state);
}

/**
 * A download of the answer of route to body, saved as filename: start()
 * hands it to the browser, follow(onStatus) reports its status until it
 * ends and resolves to the last one, cancel() stops it.
 */
export class Download {
  constructor(route, body, filename) {
    this.request = { route, body, filename };
    this.ticket = '';
    this.stopped = false;
  }

  /** Gets a ticket and has the browser fetch it as a file. */
  async start() {
    const created = await postJSON('/api/v1/create-download', this.request);
    this.ticket = created.ticket;
    const link = document.createElement('a');
    link.href = created.url;
    link.download = this.request.filename;
    link.hidden = true;
    document.body.append(link);
    link.click();
    link.remove();
  }

  /** Calls onStatus with each status read until the download ends; resolves to the last. */
  async follow(onStatus) {
    for (;;) {
      const status = await postJSON('/api/v1/read-download', { ticket: this.ticket });
      onStatus(status);
      if (ended(status) || this.stopped) return status;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  /** Stops the download (the browser's download then fails) and returns its status. */
  cancel() {
    if (!this.ticket) {
      this.stopped = true;
      return Promise.resolve(null);
    }
    return postJSON('/api/v1/cancel-download', { ticket: this.ticket });
  }
}

/** The reason a download did not end whole, in words. */
export function failure(status) {
  if (status.state === 'expired') return 'the browser did not start the download within a minute; nothing was sent';
  if (status.state === 'cancelled') return 'it was cancelled';
  if (status.error === 'the browser closed the connection') return 'the browser stopped the download (cancelled in the browser, or it could not write the file)';
  return status.error || 'it stopped before its end';
}
