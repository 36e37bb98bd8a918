// Settle's HTTP API as the page uses it. The key travels only in the Authorization header: the browser's
// EventSource cannot send one, so the event stream is read with fetch and parsed here.

export class Api {
  constructor(key) {
    this.key = key;
  }

  fetch(path, init = {}) {
    const headers = new Headers(init.headers);
    headers.set('Authorization', 'Bearer ' + this.key);
    return fetch(path, { ...init, headers, cache: 'no-store' });
  }

  async json(path) {
    const res = await this.fetch(path);
    if (res.status === 404) return null;
    if (!res.ok) throw new Error(await problem(res));
    return res.json();
  }

  session(id) {
    return this.json(`/v1/sessions/${encodeURIComponent(id)}`);
  }

  /** Every turn of the session, following the pages. */
  async turns(id) {
    const all = [];
    let after = null;
    do {
      const page = await this.json(`/v1/sessions/${encodeURIComponent(id)}/turns?limit=500`
        + (after === null ? '' : `&after=${encodeURIComponent(after)}`));
      if (page === null) return all;
      all.push(...page.turns);
      after = page.next;
    } while (after !== null && after !== undefined);
    return all;
  }

  async post(id, text, idempotencyKey) {
    const res = await this.fetch(`/v1/sessions/${encodeURIComponent(id)}/messages`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Idempotency-Key': idempotencyKey },
      body: JSON.stringify({ text }),
    });
    if (!res.ok) throw new Error(await problem(res));
    return res.json();
  }

  typing(id) {
    return this.fetch(`/v1/sessions/${encodeURIComponent(id)}/typing`, { method: 'POST' }).catch(() => {});
  }

  /** The session's event stream from after lastEventId (null: from its start). */
  events(id, lastEventId, signal) {
    const headers = { Accept: 'text/event-stream' };
    if (lastEventId !== null) headers['Last-Event-ID'] = String(lastEventId);
    return this.fetch(`/v1/sessions/${encodeURIComponent(id)}/events`, { headers, signal });
  }
}

export async function problem(res) {
  try {
    const body = await res.json();
    return `${res.status} ${body.title || ''}: ${body.detail || ''}`;
  } catch {
    return `${res.status} ${res.statusText}`;
  }
}

/**
 * The events of a Server-Sent Events body, as {id, type, data}: fields per line (id, event, data; data lines
 * joined by newlines), an event ends at a blank line, lines starting with ':' are comments.
 */
export async function* readEvents(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let event = { id: null, type: 'message', data: [] };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + (buffer.startsWith('\r\n', end) ? 2 : 1));
      if (line === '') {
        if (event.data.length > 0) yield { id: event.id, type: event.type, data: event.data.join('\n') };
        event = { id: event.id, type: 'message', data: [] };
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'id') event.id = value;
      else if (field === 'event') event.type = value;
      else if (field === 'data') event.data.push(value);
    }
  }
}
